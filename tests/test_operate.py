"""Operating queues (SPEC §18): unique jobs, pause and resume, redrive and purge.

The rules themselves are the conformance suite's (crates/alkstore-enginetest/
src/operate.rs, both engines); here are the Python surface and the
multi-process acceptance: eight processes enqueueing one key, and four waiting
workers held by a pause.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from contextlib import ExitStack

import psycopg
import pytest

import alkstore
from tests.conftest import PG_URL, Target
from tests.processes import read_line, spawn


def test_eight_processes_enqueueing_one_key_make_one_job(store: alkstore.Store, target: Target) -> None:
    q = store.queue("invoices")
    for key in ("invoice-1", "invoice-2", "invoice-3"):
        with ExitStack() as stack:
            procs = [
                stack.enter_context(spawn("unique_enqueuer.py", *target.argv(), "invoices", key))
                for _ in range(8)
            ]
            for p in procs:
                assert read_line(p) == "ready"
            for p in procs:  # released together
                assert p.stdin is not None
                p.stdin.write("go\n")
                p.stdin.flush()
            ids = {int(read_line(p)) for p in procs}
        assert len(ids) == 1, f"{key}: every caller gets the one job's id, got {ids}"
        job = q.get_job(ids.pop())
        assert job is not None and job.unique_key == key
    assert q.stats().pending == 3


def test_a_pause_holds_four_waiting_workers_until_resume(store: alkstore.Store, target: Target) -> None:
    q = store.queue("emails")
    q.pause()
    with ExitStack() as stack:
        procs = [stack.enter_context(spawn("paused_claimer.py", *target.argv(), "emails")) for _ in range(4)]
        for p in procs:
            assert read_line(p) == "waiting"
        ids = q.enqueue_many([{"n": n} for n in range(4)])
        time.sleep(2)  # the enqueue's commit woke them; the pause sent them back to waiting
        assert (q.stats().pending, q.stats().processing) == (4, 0)
        assert all(p.poll() is None for p in procs), "no claim while paused"
        q.resume()
        # Each waits with a 30 s poll: only the resume's wake explains a claim within 20 s.
        got = sorted(int(read_line(p, timeout=20)) for p in procs)
    assert got == sorted(ids)


def test_unique_key_arguments(store: alkstore.Store) -> None:
    q = store.queue("q")
    first = q.enqueue({"n": 1}, unique_key="k")
    assert q.enqueue({"n": 2}, unique_key="k") == first
    x, plain, repeat = q.enqueue_many([{}, {}, {}], unique_key=["x", None, "x"])
    assert repeat == x and first < x < plain, "a repeat in one call gets the first one's id"
    assert len(set(q.enqueue_many([{}, {}], unique_key="y"))) == 1, "one key for every job: one job"
    job = q.get_job(first)
    assert job is not None and (job.unique_key, job.payload) == ("k", {"n": 1})
    with pytest.raises(TypeError, match="unique_key must be a str or None, got int"):
        q.enqueue({}, unique_key=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unique_key must be 1-200 characters, got 0"):
        q.enqueue({}, unique_key="")
    with pytest.raises(ValueError, match="got 201"):
        q.enqueue({}, unique_key="k" * 201)
    with pytest.raises(ValueError, match="unique_key has 1 keys for 2 payloads"):
        q.enqueue_many([{}, {}], unique_key=["a"])
    with pytest.raises(ValueError, match="NUL"):
        q.enqueue_many([{}], unique_key=["a\0"])
    ob = store.outbox("hooks")
    assert ob.enqueue({"event": 1}, unique_key="order-1") == ob.enqueue({"event": 2}, unique_key="order-1")


def test_pause_shows_in_stats_and_queues(store: alkstore.Store) -> None:
    q = store.queue("idle")
    assert not q.is_paused() and not q.stats().paused
    q.pause()
    assert q.is_paused() and q.stats().paused and "paused=True" in repr(q.stats())
    assert store.queues() == ["idle"], "listed with no jobs"
    assert q.claim("w") is None and q.claim_batch("w", 5) == []

    async def aclaim() -> alkstore.JobHandle | None:
        return await q.aclaim("w", timeout=0)

    assert asyncio.run(aclaim()) is None
    q.resume()
    assert not q.is_paused()
    assert alkstore.QueueStats(pending=0, scheduled=0, processing=0, dead=0, paused=True).paused


def test_requeue_and_purge_arguments_and_tx(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=1)
    ids = q.enqueue_many([{"n": n} for n in range(3)])
    for job in q.claim_batch("w", 3):
        job.fail("boom")
    with pytest.raises(RuntimeError, match="undo"), store.transaction() as tx:
        assert q.requeue_dead([ids[0]], tx=tx) == [ids[0]]
        assert q.purge_dead([ids[1]], tx=tx) == 1
        raise RuntimeError("undo")
    assert q.stats().dead == 3, "rolled back"
    assert q.requeue_dead((i for i in [ids[2], 10**9]), limit=1) == [ids[2]]
    assert q.purge_dead(older_than_s=3600) == 0 and q.purge_dead(limit=1) == 1
    assert [j.id for j in q.dead_jobs()] == [ids[1]]
    with pytest.raises(ValueError, match="limit"):
        q.requeue_dead(limit=0)
    with pytest.raises(ValueError, match="limit"):
        q.purge_dead(limit=1001)
    with pytest.raises(TypeError, match="ids"):
        q.requeue_dead([True])
    with pytest.raises(TypeError, match="ids must be an iterable"):
        q.requeue_dead("1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="older_than_s"):
        q.purge_dead(older_than_s=-1)
    with pytest.raises(ValueError, match="at most 1000 per call"):
        q.purge_dead(list(range(1001)))


def test_unique_keys_hold_on_the_callers_connection(store: alkstore.Store, target: Target) -> None:
    q = store.queue("q")
    live = q.enqueue({"n": 0}, unique_key="b")
    app: sqlite3.Connection | psycopg.Connection[tuple[object, ...]] = (
        sqlite3.connect(target.location, timeout=5) if target.engine == "sqlite" else psycopg.connect(PG_URL)
    )
    try:
        ids = q.enqueue_many([{"n": 1}, {"n": 2}, {"n": 3}], unique_key=["a", "b", "a"], conn=app)
        app.commit()
    finally:
        app.close()
    assert ids[1] == live and ids[0] == ids[2] != live
    assert q.stats().pending == 2

    async def main() -> int:
        return await q.aenqueue({"n": 4}, unique_key="a")

    assert asyncio.run(main()) == ids[0]
