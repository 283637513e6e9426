#!/usr/bin/env python3
"""How large the SQLite WAL grows under sustained multi-process load (SPEC §20).

N worker processes share one store file for S seconds. Each one loops: enqueue a
job, claim one (a waiting claim, so every store runs its wake watcher, which reads
the file like a real worker's), ack it, and every 100 jobs reads
`stats()` through its reader connection. The parent samples the size of the
`-wal` file every 20 ms and prints the largest and the last size seen, the size
after the workers closed their stores, and the jobs done.

    python benches/wal_growth.py                      # 4 processes, 15 s
    python benches/wal_growth.py --procs 8 --seconds 30 --json

The size is what this measures, so machine noise does not change the verdict:
a faster machine does more jobs in the same time and writes more WAL frames,
which is exactly the pressure a bound must hold against.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from typing import Any

import alkstore

MIB = 1 << 20
SAMPLE_S = 0.02


def worker(path: str, seconds: float, ready: Any, go: Any, done: Any) -> None:
    """One process of the load: enqueue, claim, ack until the time is up."""
    jobs = 0
    with alkstore.open(path) as store:
        q = store.queue("churn", visibility_timeout_s=60)
        ready.release()
        go.wait()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            q.enqueue({"n": jobs, "pad": "x" * 64})
            h = q.claim("bench", timeout=1)
            if h is not None:
                h.ack()
                jobs += 1
            if jobs % 100 == 0:
                q.stats()
    done.put(jobs)


def run(path: str, procs: int, seconds: float) -> dict[str, Any]:
    """Runs the load on the store at ``path``; returns what was measured."""
    wal = path + "-wal"
    alkstore.open(path).close()  # create the store before the clock starts
    ctx = multiprocessing.get_context("spawn")
    ready, go, done = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=worker, args=(path, seconds, ready, go, done)) for _ in range(procs)]
    for p in workers:
        p.start()
    for _ in workers:
        if not ready.acquire(timeout=60):
            raise SystemExit("a worker did not start within 60 s")
    largest = last = 0
    go.set()
    while any(p.is_alive() for p in workers):
        try:
            last = os.path.getsize(wal)
        except FileNotFoundError:
            last = 0
        largest = max(largest, last)
        time.sleep(SAMPLE_S)
    for p in workers:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a worker failed with exit code {p.exitcode}")
    total = sum(done.get(timeout=10) for _ in workers)
    try:
        after_close = os.path.getsize(wal)
    except FileNotFoundError:
        after_close = 0
    return {
        "procs": procs,
        "seconds": seconds,
        "jobs": total,
        "wal_max_bytes": largest,
        "wal_last_bytes": last,
        "wal_after_close_bytes": after_close,
        "db_bytes": os.path.getsize(path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--path", default=None, help="store file (default: a fresh temp file)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.path or os.path.join(tmp, "wal.db")
        out = run(path, args.procs, args.seconds)
    if args.json:
        print(json.dumps(out))
        return
    rate = out["jobs"] / out["seconds"]
    largest, last = out["wal_max_bytes"] / MIB, out["wal_last_bytes"] / MIB
    after_close, db = out["wal_after_close_bytes"] / MIB, out["db_bytes"] / MIB
    print(
        f"{out['procs']} processes, {out['seconds']:g} s, {out['jobs']} jobs ({rate:.0f} jobs/s); "
        f"WAL largest {largest:.1f} MiB, last {last:.1f} MiB, after close {after_close:.1f} MiB; "
        f"database {db:.1f} MiB",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
