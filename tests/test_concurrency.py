"""Many claimers, crashed workers and crashed writers (SPEC §2, §4.2, §15).

The multi-process tests run real interpreter processes (tests/helpers/*.py)
that import the installed alkstore and open the test's own target.
"""

from __future__ import annotations

import collections
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import alkstore
from tests.conftest import Target
from tests.processes import HELPERS, read_line, sigkill, spawn

# --- N processes, every job acked exactly once --------------------------------------


def run_claimers(store: alkstore.Store, target: Target, tmp_path: Path, procs: int, per_proc: int) -> None:
    q = store.queue("work", visibility_timeout_s=600)
    total = procs * per_proc
    ids: list[int] = []
    for start in range(0, total, 500):
        ids += q.enqueue_many([{"n": n} for n in range(start, min(start + 500, total))])
    assert len(set(ids)) == total
    outs = [tmp_path / f"claimer-{i}.txt" for i in range(procs)]
    procs_ = [
        subprocess.Popen(
            # Half the workers claim one at a time, half in batches of 32.
            [
                sys.executable,
                str(HELPERS / "claimer.py"),
                *target.argv(),
                "work",
                str(out),
                "1" if i % 2 else "32",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, out in enumerate(outs)
    ]
    try:
        for p in procs_:
            _, err = p.communicate(timeout=600)
            assert p.returncode == 0, err
    finally:
        for p in procs_:
            if p.poll() is None:
                p.kill()
                p.communicate()
    claims: collections.Counter[int] = collections.Counter()
    per_worker = []
    for out in outs:
        lines = out.read_text().split()
        rows = [tuple(map(int, lines[i : i + 3])) for i in range(0, len(lines), 3)]
        per_worker.append(len(rows))
        for job_id, attempts, landed in rows:
            assert (attempts, landed) == (1, 1), (job_id, attempts, landed)
            claims[job_id] += 1
    assert sum(claims.values()) == total
    assert set(claims) == set(ids)
    assert max(claims.values()) == 1
    s = q.stats()
    assert (s.pending, s.processing, s.dead) == (0, 0, 0)


def test_processes_ack_each_job_once(store: alkstore.Store, target: Target, tmp_path: Path) -> None:
    run_claimers(store, target, tmp_path, procs=4, per_proc=250)


@pytest.mark.slow
def test_processes_ack_each_job_once_large(store: alkstore.Store, target: Target, tmp_path: Path) -> None:
    run_claimers(store, target, tmp_path, procs=4, per_proc=2000)


def test_threads_share_one_store(store: alkstore.Store) -> None:
    """A Store is safe to share: 8 threads claim and ack 2,000 jobs, each exactly once."""
    q = store.queue("work", visibility_timeout_s=600)
    ids = q.enqueue_many([{"n": n} for n in range(2000)])
    claimed: list[list[int]] = [[] for _ in range(8)]
    errors: list[BaseException] = []

    def worker(slot: int) -> None:
        try:
            while (h := q.claim(f"t{slot}")) is not None:
                assert h.ack()
                claimed[slot].append(h.id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert errors == []
    flat = [i for c in claimed for i in c]
    assert len(flat) == len(set(flat)) == 2000
    assert set(flat) == set(ids)


def test_threads_claim_batches(store: alkstore.Store) -> None:
    q = store.queue("work", visibility_timeout_s=600)
    ids = q.enqueue_many([{"n": n} for n in range(1000)])
    claimed: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(slot: int) -> None:
        try:
            while batch := q.claim_batch(f"t{slot}", 16, timeout=0):
                assert q.ack_batch(batch) == len(batch)
                with lock:
                    claimed.extend(h.id for h in batch)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert errors == []
    assert sorted(claimed) == sorted(ids)


# --- crashes -------------------------------------------------------------------------


def test_killed_worker_job_is_reclaimed(store: alkstore.Store, target: Target) -> None:
    q = store.queue("crash", visibility_timeout_s=2, max_attempts=3)
    job_id = q.enqueue({"survives": True})
    with spawn("holder.py", *target.argv(), "crash") as proc:
        assert read_line(proc) == f"claimed {job_id} 1"
        sigkill(proc)
    job = q.get_job(job_id)
    assert job is not None and job.state == "processing" and job.worker_id == "holder"
    store._advance_clock(5)  # past the 2 s lease
    h = q.claim("survivor")
    assert h is not None
    assert (h.id, h.attempts, h.payload) == (job_id, 2, {"survives": True})
    assert h.ack()


def test_killed_writer_leaves_nothing(store: alkstore.Store, target: Target) -> None:
    q = store.queue("crash")
    table = target.table("biz")
    with store.transaction() as tx:
        tx.execute(f"CREATE TABLE {table} (note text)")
    with spawn("writer.py", *target.argv(), "crash", table) as proc:
        assert read_line(proc) == "ready"
        sigkill(proc)
    s = q.stats()
    assert (s.pending, s.scheduled, s.processing, s.dead) == (0, 0, 0, 0)
    assert q.claim("w") is None
    with store.transaction() as tx:
        assert tx.query(f"SELECT count(*) AS n FROM {table}") == [{"n": 0}]
    # the killed writer's lock is gone: writing works again
    job_id = q.enqueue({"after": "crash"})
    h = q.claim("w")
    assert h is not None and h.id == job_id


def test_processes_open_a_fresh_target_at_once(target: Target) -> None:
    """The first open creates the tables; several processes doing it at once must all succeed."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(HELPERS / "opener.py"), *target.argv(), "q"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    ids = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            ids.append(int(out.strip()))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert len(set(ids)) == 4
    with target.open() as store:
        assert store.queue("q").stats().pending == 4


def test_ctrl_c_interrupts_a_waiting_claim(target: Target) -> None:
    with target.open():
        pass  # create the tables first, so the helper only waits
    with spawn("waiter.py", *target.argv(), "empty") as proc:
        assert read_line(proc) == "waiting"
        time.sleep(0.3)  # let it enter the wait
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert read_line(proc, timeout=10) == "interrupted"
        proc.wait(10)
        assert proc.returncode == 130
        assert time.monotonic() - started < 5


def test_lapsing_leases_never_double_claim(store_factory: Callable[..., alkstore.Store]) -> None:
    """Workers on three handles hold jobs past a 1 s lease at random: no (job, attempt) is handed
    out twice, at most one ack per job lands, and every job ends acked or dead."""
    stores = [store_factory() for _ in range(3)]
    ids = stores[0].queue("lapse", visibility_timeout_s=1, max_attempts=4).enqueue_many(list(range(20)))
    claims: collections.Counter[tuple[int, int]] = collections.Counter()
    landed: collections.Counter[int] = collections.Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []
    deadline = time.monotonic() + 60

    def worker(n: int) -> None:
        q = stores[n % 3].queue("lapse")
        rng = random.Random(n)
        try:
            while time.monotonic() < deadline:
                h = q.claim(f"w{n}", timeout=0.5)
                if h is None:
                    s = q.stats()
                    if s.pending + s.scheduled + s.processing == 0:
                        return
                    continue
                with lock:
                    claims[(h.id, h.attempts)] += 1
                time.sleep(rng.uniform(0, 2.5))
                if h.ack():
                    with lock:
                        landed[h.id] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert errors == []
    assert [k for k, c in claims.items() if c > 1] == []
    assert max(landed.values(), default=0) <= 1
    q = stores[0].queue("lapse")
    for job_id in ids:
        job = q.get_job(job_id)
        if landed[job_id]:
            assert job is None
        else:
            assert job is not None and job.state == "dead" and job.last_error == "attempts exhausted"
