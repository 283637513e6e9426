"""Wake latency of `enqueue(conn=...)`: from the application's commit to a waiting claim.

Each round, a claimer on another store handle, opened with `poll_interval_s=30` so
that only a wake can explain a prompt claim, blocks in `claim("w", timeout=10)` on a
thread. The main thread enqueues one job on the application's own connection and
commits it; the latency runs from just before `commit()` to the claim's return. On
Postgres the connection is psycopg's (LISTEN/NOTIFY wake); on SQLite it is a
`sqlite3` connection on the store's file (data_version wake). Issue 13 asks for a
wake within 50 ms.

    python benches/conn_wake.py [N]     # Postgres at ALKSTORE_TEST_DATABASE_URL
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg

import alkstore

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
PAYLOAD = {"to": "alice@example.com", "n": 1}
WARMUP = 5
# Long enough for the claimer's first look to find nothing and its wait to begin,
# so a claim that returns is a woken one.
SETTLE_S = 0.1
BOUND_MS = 50.0


def one_round(q: alkstore.Queue, commit_one: Callable[[], float]) -> float:
    """Milliseconds from the time `commit_one` returns (taken just before its commit)
    to the waiting claim's return."""
    got: list[tuple[alkstore.JobHandle | None, float]] = []

    def wait() -> None:
        job = q.claim("w", timeout=10)
        got.append((job, time.perf_counter()))

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(SETTLE_S)
    t0 = commit_one()
    t.join(15)
    job, t1 = got[0]
    if job is None:
        raise SystemExit("the claimer was not woken within 10 s")
    job.ack()
    return (t1 - t0) * 1000


def measure(claimer: alkstore.Store, commit_one: Callable[[], float], n: int) -> list[float]:
    q = claimer.queue("bench")
    for _ in range(WARMUP):
        one_round(q, commit_one)
    return [one_round(q, commit_one) for _ in range(n)]


def report(engine: str, ms: list[float]) -> None:
    cuts = statistics.quantiles(ms, n=100, method="inclusive")
    over = sum(1 for x in ms if x > BOUND_MS)
    print(
        f"{engine:8} n={len(ms)}  median {statistics.median(ms):.2f}  p95 {cuts[94]:.2f}  "
        f"p99 {cuts[98]:.2f}  max {max(ms):.2f} ms  over {BOUND_MS:.0f} ms: {over}"
    )


def postgres(n: int) -> list[float]:
    schema = "bench_" + uuid.uuid4().hex[:8]
    try:
        with (
            alkstore.open(DSN, schema=schema) as store,
            alkstore.open(DSN, schema=schema, poll_interval_s=30) as claimer,
            psycopg.connect(DSN) as c,
        ):
            q = store.queue("bench")

            def commit_one() -> float:
                q.enqueue(PAYLOAD, conn=c)
                t0 = time.perf_counter()
                c.commit()
                return t0

            ms = measure(claimer, commit_one, n)
    finally:
        with psycopg.connect(DSN, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return ms


def sqlite(n: int) -> list[float]:
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "bench.db")
        with (
            alkstore.open(path) as store,
            alkstore.open(path, poll_interval_s=30) as claimer,
        ):
            q = store.queue("bench")
            app = sqlite3.connect(path, timeout=5)

            def commit_one() -> float:
                q.enqueue(PAYLOAD, conn=app)
                t0 = time.perf_counter()
                app.commit()
                return t0

            try:
                ms = measure(claimer, commit_one, n)
            finally:
                app.close()
    return ms


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    report("postgres", postgres(n))
    report("sqlite", sqlite(n))


if __name__ == "__main__":
    main()
