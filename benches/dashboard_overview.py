"""Server time of the dashboard's overview page on a store holding 100k jobs (SPEC §19).

    python benches/dashboard_overview.py [JOBS]       # ALKSTORE_TEST_DATABASE_URL for Postgres

The store gets JOBS jobs (default 100,000) over 10 queues: per queue a tenth
claimed (processing), a tenth failed (dead), a tenth delayed (scheduled), the
rest pending. The page is requested in process through Starlette's TestClient,
so the time is the app's: routing, the reads (one stats() per queue), rendering.
Issue 15 asks for under 300 ms.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid

import psycopg
from starlette.testclient import TestClient

import alkstore
from alkstore.dashboard import create_app

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


def fill(store: alkstore.Store, jobs: int) -> None:
    per_queue = jobs // 10
    for n in range(10):
        q = store.queue(f"q{n}", max_attempts=1)
        for start in range(0, per_queue, 1000):
            size = min(1000, per_queue - start)
            q.enqueue_many([{"n": i, "pad": "x" * 200} for i in range(size)])
        for _ in range(per_queue // 10 // 1000):
            for job in q.claim_batch("w", 1000):
                job.fail("boom")
            q.claim_batch("w", 1000)  # stays processing
        q.enqueue_many([{"later": i} for i in range(per_queue // 10)], delay=3600)


def measure(engine: str, store: alkstore.Store, jobs: int) -> None:
    t = time.perf_counter()
    fill(store, jobs)
    print(f"{engine}: filled in {time.perf_counter() - t:.1f} s", flush=True)
    # Host 127.0.0.1: TestClient's default name, testserver, is not one the dashboard answers to.
    client = TestClient(create_app(store), base_url="http://127.0.0.1")
    client.get("/")  # warm: templates compiled, statements prepared
    times = []
    for _ in range(20):
        t = time.perf_counter()
        r = client.get("/")
        times.append((time.perf_counter() - t) * 1000)
        assert r.status_code == 200
    times.sort()
    print(
        f"{engine}: GET / over {jobs:,} jobs: median {statistics.median(times):.1f} ms, "
        f"max {times[-1]:.1f} ms (20 requests)",
        flush=True,
    )


def main() -> None:
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with alkstore.open(os.path.join(tempfile.mkdtemp(), "big.db")) as store:
        measure("sqlite", store, jobs)
    schema = "bench_" + uuid.uuid4().hex[:8]
    try:
        with alkstore.open(DSN, schema=schema) as store:
            measure("postgres", store, jobs)
    finally:
        with psycopg.connect(DSN, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    main()
