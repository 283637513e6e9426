"""Churns jobs through a SQLite store: enqueue, a waiting claim, ack (test_sqlite_engine's WAL test).

usage: churner.py PATH JOBS

Prints "ready" once the store is open, waits for a line on stdin, then runs JOBS
rounds and prints "done <acked>". The waiting claim starts the store's wake
watcher, which reads the file every millisecond as a real worker's does: the
always-active readers that keep a plain auto-checkpoint from ever resetting the WAL.
"""

from __future__ import annotations

import sys

import alkstore


def main() -> None:
    path, jobs = sys.argv[1], int(sys.argv[2])
    acked = 0
    with alkstore.open(path) as store:
        q = store.queue("churn", visibility_timeout_s=60)
        print("ready", flush=True)
        sys.stdin.readline()
        for n in range(jobs):
            q.enqueue({"n": n, "pad": "x" * 64})
            h = q.claim("churner", timeout=5)
            if h is not None and h.ack():
                acked += 1
            if n % 100 == 0:
                q.stats()
    print(f"done {acked}", flush=True)


if __name__ == "__main__":
    main()
