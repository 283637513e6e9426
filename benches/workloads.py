#!/usr/bin/env python3
"""alkstore's SPEC §14 workloads on SQLite and Postgres, through the public Python API.

  A  per-op:   enqueue N jobs, one commit each; drain them claim + ack one at a time
  B  batched:  enqueue_many 128 per call; drain with claim_batch(128) + q.ack_batch(jobs)
  C  backlog:  claim + ack rate with 1k jobs waiting vs --backlog jobs waiting, and the ratio
  memory:      RSS before, during and after draining a --backlog job backlog
  D  wake:     cross-process wake latency (enqueue in A -> claim in B), p50/p99, idle waiter CPU

    python benches/workloads.py                          # everything, both engines
    python benches/workloads.py -n 2000 --engines sqlite --workloads A,B
    python benches/workloads.py --backlog 20000 --workloads C,memory

Postgres uses ALKSTORE_TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/test)
in a fresh schema per run, dropped at the end. Peers are compared by ../shared/bench/compare.py.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import alkstore
from alkstore import Queue, Store

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
PAYLOAD = {"to": "alice@example.com", "n": 1}
BATCH = 128
FILL = 1000  # jobs per enqueue_many call when building a backlog (untimed)
WORKER = "bench-worker"
WORKLOADS = ("A", "B", "C", "memory", "D")


# ---------------------------------------------------------------- reporting
def report(workload: str, engine: str, phase: str, n: int, seconds: float) -> float:
    rate = n / seconds if seconds > 0 else float("inf")
    print(f"{workload:7s} {engine:9s} {phase:18s} {rate:10.0f} jobs/s  ({n} in {seconds:.2f} s)", flush=True)
    return rate


def _proc_status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_kib() -> int:
    """Current resident set size in KiB (VmRSS); the peak where /proc is unavailable."""
    return _proc_status_kib("VmRSS") or peak_rss_kib()


def peak_rss_kib() -> int:
    """Peak resident set size in KiB (VmHWM, else getrusage's ru_maxrss)."""
    hwm = _proc_status_kib("VmHWM")
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # bytes on macOS, KiB on Linux


# ---------------------------------------------------------------- targets
class Target:
    """Where one engine's stores live: a temp dir of SQLite files, or one fresh pg schema."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.dir = tempfile.mkdtemp(prefix="alkstore-bench-") if engine == "sqlite" else ""
        self.schema = "bench_" + uuid.uuid4().hex[:12]

    @contextmanager
    def store(self) -> Iterator[Store]:
        """A store for one workload: a fresh SQLite file, or the run's pg schema."""
        if self.engine == "sqlite":
            target = os.path.join(self.dir, uuid.uuid4().hex[:8] + ".db")
            with alkstore.open(target) as store:
                yield store
        else:
            with alkstore.open(DSN, schema=self.schema) as store:
                yield store

    def cleanup(self) -> None:
        if self.engine == "sqlite":
            shutil.rmtree(self.dir, ignore_errors=True)
            return
        try:
            import psycopg
        except ImportError:
            print(f"psycopg is not installed: drop schema {self.schema} by hand", flush=True)
            return
        try:
            with psycopg.connect(DSN, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
        except psycopg.Error as exc:
            print(f"could not drop schema {self.schema}: {exc}", flush=True)


def fresh_queue(store: Store, workload: str) -> Queue:
    return store.queue(f"{workload}-{uuid.uuid4().hex[:8]}")


def fill(q: Queue, n: int) -> None:
    """Enqueues n jobs in batches of FILL (used where the enqueue itself is not measured)."""
    for start in range(0, n, FILL):
        q.enqueue_many([PAYLOAD] * min(FILL, n - start))


def drain_one_at_a_time(q: Queue, limit: int | None = None) -> int:
    count = 0
    while limit is None or count < limit:
        job = q.claim(WORKER)
        if job is None:
            break
        _ = job.payload
        job.ack()
        count += 1
    return count


# ---------------------------------------------------------------- workloads
def workload_a(target: Target, n: int) -> None:
    with target.store() as store:
        q = fresh_queue(store, "a")
        t = time.perf_counter()
        for _ in range(n):
            q.enqueue(PAYLOAD)
        report("A", target.engine, "enqueue", n, time.perf_counter() - t)
        t = time.perf_counter()
        drained = drain_one_at_a_time(q)
        report("A", target.engine, "drain claim+ack", drained, time.perf_counter() - t)


def workload_b(target: Target, n: int) -> None:
    with target.store() as store:
        q = fresh_queue(store, "b")
        t = time.perf_counter()
        for start in range(0, n, BATCH):
            q.enqueue_many([PAYLOAD] * min(BATCH, n - start))
        report("B", target.engine, f"enqueue_many {BATCH}", n, time.perf_counter() - t)
        drained = 0
        t = time.perf_counter()
        while jobs := q.claim_batch(WORKER, BATCH, timeout=0):
            for job in jobs:
                _ = job.payload
            drained += q.ack_batch(jobs)
        report("B", target.engine, f"drain batch {BATCH}", drained, time.perf_counter() - t)


def drain_rate_at(target: Target, backlog: int, n: int) -> float:
    """claim + ack one at a time while `backlog` jobs wait: the queue is topped back up
    (untimed) whenever a tenth of it has been drained."""
    round_size = max(1, min(1000, backlog // 10))
    with target.store() as store:
        q = fresh_queue(store, "c")
        fill(q, backlog)
        done, seconds = 0, 0.0
        while done < n:
            todo = min(round_size, n - done)
            t = time.perf_counter()
            got = drain_one_at_a_time(q, todo)
            seconds += time.perf_counter() - t
            if got != todo:
                raise RuntimeError(f"claimed {got} of {todo} with a backlog of {backlog}")
            done += got
            fill(q, got)
        return report("C", target.engine, f"claim+ack @ {backlog}", done, seconds)


def workload_c(target: Target, n: int, backlog: int) -> None:
    small = drain_rate_at(target, 1000, n)
    big = drain_rate_at(target, backlog, n)
    print(f"C       {target.engine:9s} ratio {backlog} / 1000 backlog: {big / small:.2f}  (goal >= 0.80)")


def workload_memory(target: Target, backlog: int) -> None:
    with target.store() as store:
        q = fresh_queue(store, "mem")
        fill(q, backlog)
        gc.collect()
        before = peak_during = rss_kib()
        drained, batches = 0, 0
        t = time.perf_counter()
        while jobs := q.claim_batch(WORKER, BATCH, timeout=0):
            drained += q.ack_batch(jobs)
            batches += 1
            if batches % 50 == 0:
                peak_during = max(peak_during, rss_kib())
        seconds = time.perf_counter() - t
        del jobs
        gc.collect()
        after = rss_kib()
        peak_during = max(peak_during, after)
    report("memory", target.engine, f"drain {backlog} batched", drained, seconds)
    print(
        f"memory  {target.engine:9s} RSS before {before / 1024:.1f} MiB, "
        f"peak while draining {peak_during / 1024:.1f} MiB, after {after / 1024:.1f} MiB "
        f"(growth {(after - before) / 1024:+.1f} MiB; process peak {peak_rss_kib() / 1024:.1f} MiB)",
        flush=True,
    )


WAKE_SAMPLES = 250
WAKE_GAP_S = 0.02
IDLE_S = 3.0


def _open_target(engine: str, where: str) -> Store:
    return alkstore.open(where) if engine == "sqlite" else alkstore.open(DSN, schema=where)


def wake_consumer(engine: str, where: str, queue: str, samples: int) -> int:
    """Process B of workload D: wait for each job and print when it got it.

    Process A notes `time.time()` the moment its enqueue's commit returned;
    the latency of sample i is B's claim time minus A's commit time (both
    processes run on this machine, so the clocks agree). It includes B's own
    claim commit: getting a job is a write.
    """
    with _open_target(engine, where) as store:
        q = store.queue(queue)
        # Idle cost first: a claim that waits with nothing to find.
        cpu0, t0 = time.process_time(), time.monotonic()
        assert q.claim("idle", timeout=IDLE_S) is None
        idle_cpu = (time.process_time() - cpu0) / (time.monotonic() - t0)
        print(f"idle_cpu {idle_cpu:.5f}", flush=True)
        print("ready", flush=True)
        for _ in range(samples):
            job = q.claim("b", timeout=30)
            if job is None:
                print("timeout", flush=True)
                return 1
            print(f"got {job.payload['i']} {time.time():.6f}", flush=True)
            job.ack()
    return 0


def workload_d_wake_latency(target: Target, gap_s: float = WAKE_GAP_S) -> None:
    """Workload D: enqueue in process A -> claim in process B, woken by the commit.

    ``gap_s`` between jobs: at the default 20 ms the SQLite watcher never goes
    back to sleep on its WAL watch; ``--wake-gap-ms 200`` measures the wake
    from that sleep."""
    where = os.path.join(target.dir, "wake.db") if target.engine == "sqlite" else target.schema
    with _open_target(target.engine, where) as store:
        q = fresh_queue(store, "D")
        child = subprocess.Popen(
            [sys.executable, __file__, "--wake-consumer", target.engine, where, q.name, str(WAKE_SAMPLES)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        idle_cpu = float(child.stdout.readline().split()[1])
        assert child.stdout.readline().strip() == "ready"
        committed: list[float] = []
        for i in range(WAKE_SAMPLES):
            time.sleep(gap_s)  # let B get back to waiting
            q.enqueue({"i": i})
            committed.append(time.time())
        got = [line.split() for line in child.stdout if line.startswith("got ")]
        lats = sorted((float(t) - committed[int(i)]) * 1e3 for _, i, t in got)
        child.wait(timeout=60)
    if len(lats) != WAKE_SAMPLES:
        raise RuntimeError(f"consumer reported {len(lats)} of {WAKE_SAMPLES} samples")
    p50, p99 = lats[len(lats) // 2], lats[int(len(lats) * 0.99) - 1]
    print(
        f"D       {target.engine:9s} wake latency      p50 {p50:6.2f} ms  p99 {p99:6.2f} ms"
        f"  max {lats[-1]:6.2f} ms  ({len(lats)} samples, {gap_s * 1e3:.0f} ms apart)",
        flush=True,
    )
    print(f"D       {target.engine:9s} idle waiter CPU   {idle_cpu * 100:6.2f} % of one core", flush=True)


# ---------------------------------------------------------------- main
def available(target: Target) -> bool:
    """Opens one store to see whether the engine answers; prints why not."""
    try:
        with target.store():
            return True
    except Exception as exc:  # a missing engine must not stop the other one
        print(f"{target.engine}: skipped: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "-n", type=int, default=5000, help="jobs per workload A/B, claims per C point (default 5000)"
    )
    ap.add_argument("--engines", default="sqlite,postgres", help="comma list of: sqlite, postgres")
    ap.add_argument(
        "--backlog", type=int, default=100_000, help="large backlog for C and memory (default 100000)"
    )
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma list of: " + ", ".join(WORKLOADS))
    ap.add_argument(
        "--wake-gap-ms", type=float, default=WAKE_GAP_S * 1e3, help="D: pause before each job (default 20)"
    )
    ap.add_argument(
        "--wake-consumer", nargs=4, metavar=("ENGINE", "WHERE", "QUEUE", "N"), help=argparse.SUPPRESS
    )
    args = ap.parse_args(argv)
    if args.wake_consumer:
        engine, where, queue, samples = args.wake_consumer
        return wake_consumer(engine, where, queue, int(samples))
    engines = [e for e in args.engines.split(",") if e]
    workloads = [w for w in args.workloads.split(",") if w]
    for bad in set(engines) - {"sqlite", "postgres"}:
        ap.error(f"unknown engine {bad!r}")
    for bad in set(workloads) - set(WORKLOADS):
        ap.error(f"unknown workload {bad!r}")
    if args.n < 1 or args.backlog < 1:
        ap.error("-n and --backlog must be >= 1")

    runs: dict[str, Callable[[Target], None]] = {
        "A": lambda t: workload_a(t, args.n),
        "B": lambda t: workload_b(t, args.n),
        "C": lambda t: workload_c(t, args.n, args.backlog),
        "memory": lambda t: workload_memory(t, args.backlog),
        "D": lambda t: workload_d_wake_latency(t, args.wake_gap_ms / 1e3),
    }
    print(f"alkstore workloads: n={args.n} backlog={args.backlog} engines={','.join(engines)}", flush=True)
    failed = False
    for engine in engines:
        target = Target(engine)
        try:
            if not available(target):
                continue
            for name in workloads:
                try:
                    runs[name](target)
                except Exception as exc:  # report and go on with the other workloads
                    failed = True
                    print(f"{name:7s} {engine:9s} FAILED: {type(exc).__name__}: {exc}", flush=True)
        finally:
            target.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
