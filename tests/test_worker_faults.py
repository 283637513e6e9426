"""A Worker meeting faults at its edges (issue 23): a settle that fails for a
moment, and the store closed under a running Worker.

The transient failure is real on both engines: on SQLite the application's own
``sqlite3`` connection holds the file's write lock past the store's
``busy_timeout_ms`` (SQLITE_BUSY); on Postgres an administrator's connection
holds a lock on the job table past the store's ``lock_timeout`` (SQLSTATE
55P03). The lock is let go once the Worker has counted a settle tried again:
a signal the code gives, not a sleep.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

import alkstore
from alkstore import JobHandle, Store, Worker
from tests.conftest import PG_URL, Target, pg_admin_connect
from tests.workers import running, wait_for


def _open_touchy(target: Target) -> Store:
    """A store that gives up waiting for a lock after a fraction of a second."""
    if target.engine == "sqlite":
        return target.open(busy_timeout_ms=100)
    sep = "&" if "?" in PG_URL else "?"
    assert target.schema is not None
    return alkstore.open(f"{PG_URL}{sep}options=-c%20lock_timeout%3D100", schema=target.schema)


@contextmanager
def _writes_blocked(target: Target) -> Iterator[None]:
    """Holds the lock a settle needs, from outside the store, for the block."""
    if target.engine == "sqlite":
        app = sqlite3.connect(target.location, isolation_level=None)
        app.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            app.execute("ROLLBACK")
            app.close()
        return
    with pg_admin_connect() as admin, admin.transaction():
        admin.execute(f'LOCK TABLE "{target.schema}".jobs IN EXCLUSIVE MODE')
        yield


@pytest.mark.parametrize("outcome", ["ack", "fail", "retry"])
def test_a_settle_that_fails_for_a_moment_is_tried_again_until_it_lands(target: Target, outcome: str) -> None:
    store = _open_touchy(target)
    try:
        q = store.queue("q", max_attempts=1)
        job_id = q.enqueue({"n": 1})
        worker = Worker(store, concurrency=1)
        started, go_on = threading.Event(), threading.Event()

        @worker.handler("q")
        def handle(_payload: object, _job: JobHandle) -> None:
            started.set()
            assert go_on.wait(30)
            if outcome == "fail":
                raise alkstore.Fail("refused")
            if outcome == "retry":
                raise RuntimeError("again")

        with running(worker):
            assert started.wait(30)
            with _writes_blocked(target):
                go_on.set()
                # The settle meets the lock, gives up after the timeout, and is tried again.
                wait_for(lambda: worker.counts.settle_retries >= 2, timeout=30)
                assert worker.counts.in_flight == 1, "still settling while the lock is held"
            wait_for(lambda: worker.counts.in_flight == 0, timeout=30)
        counts = worker.counts
        assert counts.lost == 0, counts
        if outcome == "ack":
            assert counts.acked == 1 and q.get_job(job_id) is None, "the work succeeded: acked, not run again"
        else:
            # max_attempts=1: both go dead, with the handler's own error, not "attempts exhausted".
            dead = q.get_job(job_id)
            assert counts.dead == 1 and dead is not None and dead.state == "dead", counts
            assert dead.last_error == ("refused" if outcome == "fail" else "RuntimeError('again')")
    finally:
        store.close()


def test_closing_the_store_under_a_running_worker_says_so_once_and_stops_it(
    store_factory: Callable[..., Store], caplog: pytest.LogCaptureFixture
) -> None:
    own = store_factory()
    q = own.queue("q")
    q.enqueue_many([{"n": n} for n in range(20)])
    worker = Worker(own, concurrency=4)
    busy = threading.Barrier(5)
    release = threading.Event()

    @worker.handler("q")
    def handle(_payload: object, _job: JobHandle) -> None:
        busy.wait(30)
        release.wait(30)

    errors: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except BaseException as exc:
            errors.append(exc)

    caplog.set_level(logging.INFO, logger="alkstore")
    t = threading.Thread(target=run, daemon=True)
    t.start()
    busy.wait(30)  # four handlers are running
    own.close()
    t.join(30)
    assert not t.is_alive() and not worker.running
    release.set()
    wait_for(lambda: worker.counts.in_flight == 0, timeout=30)
    assert len(errors) == 1 and isinstance(errors[0], alkstore.StoreClosed)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("alkstore")]
    closed = [m for m in messages if "store was closed" in m]
    assert closed == [
        "the store was closed while the worker ran: 4 running job(s) stay processing until their leases "
        "lapse, then run again; the worker stopped"
    ], messages
    assert not [m for m in messages if "escaped the handler" in m or "had not finished" in m], messages
    assert worker.counts.lost == 4 and worker.counts.released == 0, worker.counts
