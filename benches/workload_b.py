"""Workload B against its batched raw floor on SQLite (SPEC §20), side by side.

    python benches/workload_b.py [-n 20000] [--rounds 7]

Each round drains N jobs twice, in turn: alkstore's ``claim_batch(128)``, a
read of every payload, and one ``ack_batch`` per batch; and the floor, the
same shape as bare statements through Python's ``sqlite3`` on compare.py's
one-index table (one ``UPDATE ... WHERE id IN (SELECT ... LIMIT 128)
RETURNING``, ``json.loads`` of every payload, then one transaction of
per-row ``DELETE``\\s). Both use WAL and ``synchronous=NORMAL``. Prints each
round and the median of the per-round ratios (the goal is >= 0.9).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import alkstore

PAYLOAD = {"to": "alice@example.com", "n": 1}
TEXT = json.dumps(PAYLOAD)
BATCH = 128


def floor(n: int) -> float:
    import sqlite3

    db = sqlite3.connect(os.path.join(tempfile.mkdtemp(prefix="bench-b-"), "q.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE q(id INTEGER PRIMARY KEY, queue TEXT, payload TEXT, state TEXT DEFAULT 'pending',"
        " priority INT DEFAULT 0, run_at INT, worker TEXT, deadline INT, attempts INT DEFAULT 0)"
    )
    db.execute("CREATE INDEX q_ready ON q(queue, priority DESC, run_at, id) WHERE state='pending'")
    db.executemany("INSERT INTO q(queue,payload,run_at) VALUES ('e',?,unixepoch())", [(TEXT,)] * n)
    claim = (
        "UPDATE q SET state='processing', worker='w', deadline=unixepoch()+300, attempts=attempts+1 "
        "WHERE id IN (SELECT id FROM q WHERE queue='e' AND state='pending' AND run_at<=unixepoch() "
        f"ORDER BY priority DESC, run_at, id LIMIT {BATCH}) RETURNING id, payload"
    )
    done, t = 0, time.perf_counter()
    while rows := db.execute(claim).fetchall():
        for _, payload in rows:
            json.loads(payload)
        db.execute("BEGIN")
        db.executemany("DELETE FROM q WHERE id=? AND worker='w'", [(r[0],) for r in rows])
        db.execute("COMMIT")
        done += len(rows)
    seconds = time.perf_counter() - t
    assert done == n, done
    db.close()
    return n / seconds


def alk(n: int) -> float:
    with alkstore.open(os.path.join(tempfile.mkdtemp(prefix="bench-b-"), "q.db")) as store:
        q = store.queue("e")
        for i in range(0, n, 1000):
            q.enqueue_many([PAYLOAD] * min(1000, n - i))
        done, t = 0, time.perf_counter()
        while jobs := q.claim_batch("w", BATCH, timeout=0):
            for job in jobs:
                _ = job.payload
            done += q.ack_batch(jobs)
        seconds = time.perf_counter() - t
    assert done == n, done
    return n / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    ratios = []
    for i in range(args.rounds):
        f, a = floor(args.n), alk(args.n)
        ratios.append(a / f)
        print(f"B round {i + 1}: floor {f:9.0f} jobs/s  alkstore {a:9.0f} jobs/s  {a / f:5.2f}x", flush=True)
    print(
        f"B median ratio {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})",
        flush=True,
    )


if __name__ == "__main__":
    main()
