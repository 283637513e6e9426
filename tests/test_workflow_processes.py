"""Workflows (SPEC §25) with real workers: the last two parents of a child
acked at once by two processes, and fan-out/fan-in run end to end by a
Worker and by a task registry's worker, results included."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

import alkstore
from alkstore import JobHandle, Store, Worker
from tests.conftest import Target
from tests.processes import read_line, spawn
from tests.workers import running, wait_for


def test_the_last_two_parents_acked_by_two_processes_release_each_child_exactly_once(
    store: Store, target: Target
) -> None:
    n = 30
    left = store.queue("left").enqueue_many([{"i": i} for i in range(n)])
    right = store.queue("right").enqueue_many([{"i": i} for i in range(n)])
    children = [
        store.queue("joined").enqueue({"i": i}, after=[lt, rt])
        for i, (lt, rt) in enumerate(zip(left, right, strict=True))
    ]
    joined = store.queue("joined")
    assert joined.stats().waiting == n
    with ExitStack() as stack:
        procs = [
            stack.enter_context(spawn("parent_acker.py", *target.argv(), queue, str(n)))
            for queue in ("left", "right")
        ]
        for p in procs:
            assert read_line(p) == f"claimed {n}"
        for p in procs:  # both go at once: the i-th acks of the two race
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            assert read_line(p) == f"acked {n}"
    s = joined.stats()
    assert (s.waiting, s.pending) == (0, n), "every child released, none left waiting"
    claimed = joined.claim_batch("w", n + 5)
    assert sorted(j.id for j in claimed) == children, "each child once, no copy"
    for j in claimed:
        i = children.index(j.id)
        assert j.parent_results() == {
            left[i]: {"from": "left", "id": left[i]},
            right[i]: {"from": "right", "id": right[i]},
        }
    assert joined.claim("w") is None


def test_a_worker_fans_out_and_in(store: Store) -> None:
    """A split job enqueues its parts and a sum that waits for them, in one
    transaction with its own ack; the sum reads the parts' results."""
    worker = Worker(store, concurrency=4)

    @worker.handler("split")
    def split(payload: dict[str, list[int]], job: JobHandle) -> None:
        with store.transaction() as tx:
            parts = store.queue("square").enqueue_many([{"n": n} for n in payload["numbers"]], tx=tx)
            total = store.queue("sum").enqueue({}, after=parts, keep_result=600, tx=tx)
            assert job.ack(result={"sum_job": total}, tx=tx)

    @worker.handler("square")
    def square(payload: dict[str, int], job: JobHandle) -> int:
        return payload["n"] ** 2

    @worker.handler("sum")
    async def add_up(payload: object, job: JobHandle) -> int:
        return sum(int(str(v)) for v in job.parent_results().values())

    split_id = store.queue("split").enqueue({"numbers": list(range(1, 11))}, keep_result=600)

    def summed() -> alkstore.Result | None:
        first = store.result(split_id)
        return None if first is None else store.result(first.value["sum_job"])

    with running(worker):
        wait_for(lambda: summed() is not None, what="the sum's result")
    got = summed()
    assert got is not None and (got.state, got.value) == ("done", 385)
    assert worker.counts.acked == 12
    assert [store.queue(q).stats().waiting for q in ("split", "square", "sum")] == [0, 0, 0]


def test_a_task_chain_runs_on_the_registrys_worker(store: Store) -> None:
    tasks = alkstore.Tasks(store)

    @tasks.task(queue="pipeline")
    def fetch(url: str) -> dict[str, object]:
        return {"url": url, "bytes": len(url)}

    @tasks.task(queue="pipeline")
    async def measure() -> int:
        got = alkstore.current_job().parent_results()
        return sum(int(str(r["bytes"])) for r in got.values() if isinstance(r, dict))

    @tasks.task(queue="report", max_attempts=1)
    def report(fail: bool) -> str:
        if fail:
            raise alkstore.Fail("no report today")
        return "done"

    pages = [fetch.enqueue(u) for u in ("https://a.example", "https://bb.example")]
    size = measure.options(after=pages, keep_result=600).enqueue()
    broken = report.options(after=[size], keep_result=600).enqueue(True)
    never = report.options(after=[broken]).enqueue(False)
    worker = tasks.worker(concurrency=2)
    with running(worker):
        wait_for(lambda: worker.counts.acked == 3 and worker.counts.dead == 1, what="the chain")
    got = store.result(size)
    assert got is not None and got.value == len("https://a.example") + len("https://bb.example")
    dead = store.result(broken)
    assert dead is not None and (dead.state, dead.error) == ("dead", "no report today")
    job = store.queue("report").get_job(never)
    assert job is not None and job.state == "dead" and str(broken) in (job.last_error or "")


def test_a_worker_acks_a_job_whose_return_value_cannot_be_kept(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Not JSON, or JSON past the payload bound: the work is done, so the job
    is acked without a result (never run again), and the log says why."""
    worker = Worker(store, concurrency=2)

    @worker.handler("odd")
    def odd(payload: dict[str, str], job: JobHandle) -> object:
        return {1, 2} if payload["kind"] == "set" else "x" * (2 << 20)

    q = store.queue("odd")
    ids = [q.enqueue({"kind": k}, keep_result=600) for k in ("set", "huge")]
    with caplog.at_level("WARNING", logger="alkstore.worker"), running(worker):
        wait_for(lambda: worker.counts.acked == 2, what="both acked")
    assert (worker.counts.retried, worker.counts.dead) == (0, 0)
    for job_id in ids:
        got = store.result(job_id)
        assert got is not None and (got.state, got.value) == ("done", None), "kept: acked, without a value"
        assert any(
            f"job {job_id} " in r.getMessage() and "none is kept" in r.getMessage() for r in caplog.records
        )
