"""What the Worker adds per job over a bare claim + ack loop on the same API.

    python benches/worker_overhead.py [-n 3000] [--engines sqlite,postgres] [--rounds 3]

For each engine: enqueue N no-op jobs, then drain them (a) with a loop of
``q.claim(timeout=0)`` + ``job.ack()`` and (b) with ``Worker(concurrency=1)``.
Prints jobs/s and this process's CPU milliseconds per 1,000 jobs (the
database server's CPU is not in it: this isolates the client side), and the
Worker's ratio to the loop. Medians over --rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable

import alkstore

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


def fresh(engine: str) -> alkstore.Store:
    if engine == "sqlite":
        return alkstore.open(os.path.join(tempfile.mkdtemp(prefix="bench-"), "w.db"))
    return alkstore.open(DSN, schema=f"bench_{uuid.uuid4().hex[:10]}")


def loop(store: alkstore.Store, n: int) -> None:
    q = store.queue("w")
    for _ in range(n):
        job = q.claim("loop", timeout=0)
        assert job is not None and job.ack()


def worker(store: alkstore.Store, n: int) -> None:
    w = alkstore.Worker(store, concurrency=1, worker_id="bench")
    done = 0

    @w.handler("w")
    def handle(payload: object, job: alkstore.JobHandle) -> None:
        nonlocal done
        done += 1
        if done == n:
            w.stop()

    w.run()
    assert w.counts.acked == n, w.counts


def measure(engine: str, n: int, drain: Callable[[alkstore.Store, int], None]) -> tuple[float, float]:
    with fresh(engine) as store:
        store.queue("w").enqueue_many([{"n": i} for i in range(n)])
        cpu, wall = time.process_time(), time.perf_counter()
        drain(store, n)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return n / wall, cpu / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=3000)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for engine in args.engines.split(","):
        got: dict[str, list[tuple[float, float]]] = {"loop": [], "Worker": []}
        for _ in range(args.rounds):
            got["loop"].append(measure(engine, args.n, loop))
            got["Worker"].append(measure(engine, args.n, worker))
        med = {
            k: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v))
            for k, v in got.items()
        }
        for k, (rate, cpu) in med.items():
            print(
                f"{engine:9s} {k:7s} {rate:9.0f} jobs/s  {cpu:8.1f} client CPU ms per 1,000 jobs", flush=True
            )
        print(
            f"{engine:9s} Worker/loop: {med['Worker'][0] / med['loop'][0]:.2f}x the rate,"
            f" {med['Worker'][1] / med['loop'][1]:.2f}x the client CPU per job",
            flush=True,
        )


if __name__ == "__main__":
    main()
