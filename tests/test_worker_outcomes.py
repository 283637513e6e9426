"""What a Worker counts when a job's outcome lands in a race (issue 43):
``WorkerCounts.cancelled`` rose with no cancel anywhere.

Two ways, each forced here for real:

* an ack whose reply was lost: the connection died after the ack committed
  (``tests/pgproxy.py`` drops the reply to the committed ack and closes the
  connection), so trying the ack again found the job gone, and a gone job read
  as cancelled. Postgres only: a SQLite call has no network to lose a reply on;
* a sync task that returned while its timeout's retry was still on its way
  (held behind a lock on the job's row): the timeout had marked the handle, so
  the task's own settle read the mark as a cancel. Both engines.

Neither job was cancelled: the first is acked, the second retried.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import alkstore
from alkstore import JobHandle, Store, Worker
from alkstore._beats import BEATS, beat_interval
from alkstore._runner import settle
from tests.conftest import PG_URL, Target, pg_admin_connect
from tests.pgproxy import LostReply
from tests.workers import running, wait_for


def _the_ack_of(schema: str) -> LostReply:
    """A proxy that loses the reply to the first committed plain ack of a job in ``schema``."""

    def is_ack(query: str) -> bool:
        # The statement itself, not a migration's function that contains it.
        ack = f'DELETE FROM "{schema}".jobs WHERE id = ' in query and "state = 'processing'" in query
        return ack and query.startswith("WITH n AS MATERIALIZED")

    return LostReply(PG_URL, is_ack)


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_workers_ack_whose_reply_is_lost_counts_acked_not_cancelled(target: Target) -> None:
    """The Worker acks with its next claim in one transaction (ADR 0022); the
    reply to its COMMIT is lost, the plain ack tried again finds the job gone."""
    assert target.schema is not None
    with _the_ack_of(target.schema) as proxy:
        store = alkstore.open(proxy.url, schema=target.schema)
        try:
            q = store.queue("q")
            job_id = q.enqueue({"n": 1})
            worker = Worker(store, concurrency=1)

            @worker.handler("q")
            def handle(_payload: object, _job: JobHandle) -> None:
                return None  # a plain ack: no result to keep

            with running(worker):
                wait_for(lambda: proxy.lost != [] and worker.counts.in_flight == 0, what="the ack settled")
            counts = worker.counts
        finally:
            store.close()
    assert len(proxy.lost) == 1, "the committed ack's reply was lost once"
    assert (counts.acked, counts.cancelled, counts.lost) == (1, 0, 0), counts
    with target.open() as direct:
        assert direct.queue("q").get_job(job_id) is None, "acked: the row is gone"


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_plain_ack_whose_reply_is_lost_is_acked(target: Target) -> None:
    """The runner's own ack (the outbox relay's, a Worker's fallback): the
    ack is tried again after the lost connection, and finds the job gone."""
    assert target.schema is not None
    with _the_ack_of(target.schema) as proxy:
        store = alkstore.open(proxy.url, schema=target.schema)
        try:
            q = store.queue("q")
            q.enqueue({"n": 1})
            job = q.claim("w")
            assert job is not None
            entry = BEATS.add(job, beat_interval(job))
            try:
                outcome = settle(job, None, beat=entry)
            finally:
                BEATS.remove(entry)
        finally:
            store.close()
    assert len(proxy.lost) == 1
    assert outcome == "acked"
    assert not job.cancel_requested, "nobody cancelled it"


@contextmanager
def _row_locked(target: Target, job_id: int) -> Iterator[str]:
    """Holds the lock a write of job ``job_id``'s row needs, from outside the
    store, for the block; yields the row's state read under that lock."""
    if target.engine == "sqlite":
        app = sqlite3.connect(target.location, isolation_level=None)
        app.execute("BEGIN IMMEDIATE")
        try:
            (state,) = app.execute("SELECT state FROM __alkstore_jobs WHERE id = ?", [job_id]).fetchone()
            yield str(state)
        finally:
            app.execute("ROLLBACK")
            app.close()
        return
    with pg_admin_connect() as admin, admin.transaction():
        row = admin.execute(
            f'SELECT state FROM "{target.schema}".jobs WHERE id = %s FOR UPDATE', [job_id]
        ).fetchone()
        assert row is not None
        yield str(row[0])


#: What the run logs when it leaves a job to its timeout's alarm.
LEFT_TO_ALARM = "its timeout's alarm settles it"


def test_a_sync_task_returning_while_its_timeout_retries_it_counts_retried_not_cancelled(
    target: Target, caplog: pytest.LogCaptureFixture
) -> None:
    # SQLite: the alarm's retry waits for the write lock rather than failing.
    store: Store = target.open(busy_timeout_ms=60_000) if target.engine == "sqlite" else target.open()
    try:
        tasks = alkstore.Tasks(store)
        started, returned = threading.Event(), threading.Event()

        @tasks.task(queue="slow", timeout=3.0)
        def slow() -> str:
            started.set()
            job = alkstore.current_job()
            wait_for(lambda: job.cancel_requested, timeout=60, what="the timeout marks the handle")
            returned.set()
            return "finished, too late"

        job_id = slow.enqueue()
        worker = tasks.worker(concurrency=1)
        caplog.set_level(logging.DEBUG, logger="alkstore.worker")
        with running(worker):
            assert started.wait(60)
            with _row_locked(target, job_id) as state:
                # Locked before the timeout: its retry waits behind this lock.
                assert state == "processing", "the lock came after the timeout's retry"
                assert returned.wait(60), "the task returns once the timeout marked it"
                # The run decided (before the fix: a cancel, counted at once).
                wait_for(
                    lambda: (
                        worker.counts.cancelled > 0
                        or any(LEFT_TO_ALARM in r.getMessage() for r in caplog.records)
                    ),
                    timeout=60,
                    what="the run to decide",
                )
            wait_for(lambda: worker.counts.in_flight == 0, timeout=60, what="the retry lands")
        counts = worker.counts
        job = store.queue("slow").get_job(job_id)
    finally:
        store.close()
    assert (counts.retried, counts.cancelled, counts.acked) == (1, 0, 0), counts
    assert job is not None and (job.state, job.attempts) == ("pending", 1), "retried by its timeout"
