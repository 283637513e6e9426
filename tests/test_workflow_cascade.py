"""The failure cascade at scale, and what a failed settlement may not do (issue 43).

A chain of jobs (each ``after=[previous]``) used to fail at its head one nested
trigger per generation: from about 350 generations on SQLite and 400 on
Postgres the head's ``fail()`` raised, the Worker's last-attempt retry did too,
and once the head's lease lapsed every claim of its queue ran the exhaustion
step, which raised again: no job of that queue was ever handed out. Both
engines now settle the descendants set-wise; the rules are pinned in the Rust
conformance suite (``alkstore-enginetest/src/cascade.rs``), these check the
Python surface at the sizes the issue names, the Worker, and a burial that
fails.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import alkstore
from alkstore import Queue, Store
from tests.conftest import Target, pg_admin_connect
from tests.workers import running, wait_for


def chain(store: Store, q: Queue, n: int) -> list[int]:
    """``n`` jobs of ``q``, each waiting for the one before, in one transaction."""
    ids: list[int] = []
    with store.transaction() as tx:
        ids.append(q.enqueue({"i": 0}, tx=tx))
        for i in range(1, n):
            ids.append(q.enqueue({"i": i}, after=[ids[-1]], tx=tx))
    return ids


@pytest.mark.slow
@pytest.mark.timeout(900)  # the enqueue of 100,000 linked jobs one by one: about a minute on Postgres
def test_a_chain_of_100000_fails_at_its_head_in_one_call(store: Store) -> None:
    q = store.queue("pipeline", max_attempts=1)
    ids = chain(store, q, 100_000)
    other = q.enqueue({"unrelated": True})
    head = q.claim("w")
    assert head is not None and head.id == ids[0]
    assert head.fail("boom")
    assert q.stats().dead == 100_000 and q.stats().waiting == 0
    root = f"parent job {ids[0]} died: boom"
    last = q.get_job(ids[-1])
    assert last is not None and last.state == "dead"
    assert last.last_error == f"parent job {ids[-2]} died: {root}", "one line, however deep"
    got = q.claim("w")
    assert got is not None and got.id == other, "the queue keeps serving"


def test_a_worker_dead_letters_the_head_of_a_long_chain_and_keeps_serving(store: Store) -> None:
    q = store.queue("pipeline", max_attempts=1)
    ids = chain(store, q, 600)
    worker = alkstore.Worker(store, concurrency=1)
    ran: list[int] = []

    @worker.handler("pipeline")
    def handle(payload: dict[str, object], job: alkstore.JobHandle) -> None:
        if job.id == ids[0]:
            raise RuntimeError("bad header")
        ran.append(job.id)

    with running(worker):
        other = q.enqueue({"unrelated": True})
        wait_for(lambda: other in ran, timeout=30, what="the unrelated job to run")
    assert q.stats().dead == 600
    assert ran == [other]
    assert worker.counts.dead == 1, "only the head failed on the worker; the chain died with it"


def test_a_long_chain_s_exhausted_head_does_not_wedge_its_queue(store: Store) -> None:
    q = store.queue("pipeline", max_attempts=1, visibility_timeout_s=30)
    ids = chain(store, q, 1000)
    assert q.claim("w") is not None
    store._advance_clock(31)
    other = q.enqueue({"unrelated": True})
    got = q.claim("w")
    assert got is not None and got.id == other
    head = q.get_job(ids[0])
    assert head is not None and head.state == "dead" and head.last_error == "attempts exhausted"
    assert q.stats().dead == 1000


@contextmanager
def burial_fails(target: Target, job_id: int) -> Iterator[None]:
    """Makes the move of job ``job_id`` to dead fail, as any write may (a full
    disk, a timeout, a trigger of the application's), until the block ends."""
    if target.engine == "sqlite":
        with sqlite3.connect(target.location) as conn:
            conn.execute(
                "CREATE TRIGGER test_burial_fails BEFORE INSERT ON __alkstore_dead "
                f"WHEN NEW.id = {job_id} BEGIN SELECT RAISE(ABORT, 'the burial failed'); END"
            )
        conn.close()
        try:
            yield
        finally:
            with sqlite3.connect(target.location) as conn:
                conn.execute("DROP TRIGGER test_burial_fails")
            conn.close()
        return
    s = f'"{target.schema}"'
    with pg_admin_connect() as pg:
        pg.execute(
            f"CREATE FUNCTION {s}.test_burial_fails() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'the burial failed'; END $$"
        )
        pg.execute(
            f"CREATE TRIGGER test_burial_fails BEFORE INSERT ON {s}.dead FOR EACH ROW "
            f"WHEN (NEW.id = {job_id}) EXECUTE FUNCTION {s}.test_burial_fails()"
        )
    try:
        yield
    finally:
        with pg_admin_connect() as pg:
            pg.execute(f"DROP FUNCTION {s}.test_burial_fails() CASCADE")


def test_a_burial_that_fails_does_not_block_claims_of_other_jobs(store: Store, target: Target) -> None:
    q = store.queue("q", max_attempts=1, visibility_timeout_s=30)
    stuck = q.enqueue({"n": 0})
    child = q.enqueue({"n": 1}, after=[stuck])
    assert (h := q.claim("w")) is not None and h.id == stuck
    others = q.enqueue_many([{"n": n} for n in range(2, 5)])
    store._advance_clock(31)
    with burial_fails(target, stuck):
        got = [q.claim("w") for _ in others]
        assert [g.id if g else None for g in got] == others, "the other jobs are served"
        assert q.claim("w") is None, "the exhausted job is not handed out again"
        head = q.get_job(stuck)
        assert head is not None and head.state == "processing", "its burial failed: it stays"
    assert q.claim("w") is None
    head = q.get_job(stuck)
    assert head is not None and head.state == "dead", "the next claim buried it"
    dead_child = q.get_job(child)
    assert dead_child is not None and dead_child.last_error == f"parent job {stuck} died: attempts exhausted"


def test_the_documented_redrive_order_keeps_the_parent_s_result(store: Store) -> None:
    # docs/workflows.md: requeue the failed parent first, its child after the
    # parent's ack. The child read {parent: None} although the parent
    # returned {"rows": 42}.
    q = store.queue("etl", max_attempts=1)
    parent = q.enqueue({"step": "extract"})
    child = q.enqueue({"step": "load"}, after=[parent])
    assert (h := q.claim("w")) is not None and h.fail("bad header")
    assert q.requeue_dead([parent]) == [parent]
    assert (h := q.claim("w")) is not None and h.id == parent and h.ack(result={"rows": 42})
    result = store.result(parent)
    assert result is not None and result.value == {"rows": 42}
    assert q.requeue_dead([child]) == [child]
    hc = q.claim("w")
    assert hc is not None and hc.id == child
    assert hc.parent_results() == {parent: {"rows": 42}}
