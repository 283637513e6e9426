"""What an index of leases costs SQLite's per-op drain (issue 31, ADR 0033).

    python benches/live_index_floor.py [-n 5000] [--rounds 5] [--batch 128]

Bare ``sqlite3``, no alkstore: compare.py's raw floor (one partial index of
ready rows; the claim an ``UPDATE … RETURNING`` of the best ready row, the
ack a ``DELETE``), and the same floor with what a queue that reclaims lapsed
leases must add — an index that finds processing rows by deadline and a
probe of it in every claim — in two layouts:

- ``leased``: a second partial index of processing rows (alkstore up to
  migration 0017): a claim writes both indexes, the ack the leased one;
- ``live``: one index of every row keyed (queue, state DESC, deadline,
  priority DESC, run_at, id) (migration 0018): a claim moves its entry from
  the head of the pending run to the tail of the processing run, the same
  leaf page, and the ack deletes it there;
- ``live+hwm``: ``live`` plus what keeps ids from being reused (ADR 0001):
  an AFTER DELETE trigger that records the highest id when the row with the
  highest id goes.

``--batch B`` drains as workload B does (``benches/workload_b.py``): each
claim takes up to B rows (``id IN (… LIMIT B)``), and their acks are one
transaction of per-row ``DELETE``\\s.

Rounds are interleaved; printed: each layout's drain rate, its median, and
that median against the floor's.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time

TEXT = json.dumps({"to": "alice@example.com", "n": 1})
LAYOUTS = ("floor", "leased", "live", "live+hwm")
PROBE = (
    " AND NOT EXISTS (SELECT 1 FROM q WHERE queue = 'e' AND state = 'processing' AND deadline < unixepoch())"
)


def drain_rate(layout: str, n: int, batch: int) -> float:
    db = sqlite3.connect(os.path.join(tempfile.mkdtemp(prefix="live-index-"), "q.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE q(id INTEGER PRIMARY KEY, queue TEXT, payload TEXT, state TEXT DEFAULT 'pending',"
        " priority INT DEFAULT 0, run_at INT, worker TEXT, deadline INT, attempts INT DEFAULT 0)"
    )
    ready = "SELECT id FROM q WHERE queue = 'e' AND state = 'pending' AND run_at <= unixepoch()"
    probe = PROBE
    if layout.startswith("live"):
        db.execute("CREATE INDEX q_live ON q(queue, state DESC, deadline, priority DESC, run_at, id)")
        ready = ready.replace("FROM q WHERE", "FROM q INDEXED BY q_live WHERE") + " AND deadline IS NULL"
    else:
        db.execute("CREATE INDEX q_ready ON q(queue, priority DESC, run_at, id) WHERE state = 'pending'")
    if layout == "leased":
        db.execute("CREATE INDEX q_leased ON q(queue, deadline) WHERE state = 'processing'")
    if layout == "live+hwm":
        db.execute("CREATE TABLE ids(one INTEGER PRIMARY KEY CHECK (one = 1), hwm INTEGER NOT NULL)")
        db.execute("INSERT INTO ids VALUES (1, 0)")
        db.execute(
            "CREATE TRIGGER q_hwm AFTER DELETE ON q WHEN NOT EXISTS (SELECT 1 FROM q WHERE id > old.id) "
            "BEGIN UPDATE ids SET hwm = max(hwm, old.id) WHERE one = 1; END"
        )
    if layout == "floor":
        probe = ""
    pick = "= (" if batch == 1 else "IN ("
    claim = (
        "UPDATE q SET state = 'processing', worker = 'w', deadline = unixepoch() + 300, "
        "attempts = attempts + 1 "
        f"WHERE id {pick}{ready} ORDER BY priority DESC, run_at, id LIMIT {batch}){probe} "
        "RETURNING id, payload"
    )
    ack = "DELETE FROM q WHERE id = ? AND worker = 'w' AND state = 'processing'"
    for _ in range(n):
        db.execute("INSERT INTO q(queue, payload, run_at) VALUES ('e', ?, unixepoch())", (TEXT,))
    done = 0
    start = time.perf_counter()
    if batch == 1:
        while (row := db.execute(claim).fetchone()) is not None:
            json.loads(row[1])
            db.execute(ack, (row[0],))
            done += 1
    while rows := db.execute(claim).fetchall():
        for _, payload in rows:
            json.loads(payload)
        db.execute("BEGIN")
        db.executemany(ack, [(r[0],) for r in rows])
        db.execute("COMMIT")
        done += len(rows)
    seconds = time.perf_counter() - start
    db.close()
    if done != n:
        raise SystemExit(f"{layout}: drained {done} of {n}")
    return n / seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {layout: [] for layout in LAYOUTS}
    for _ in range(args.rounds):
        for layout in LAYOUTS:
            rates[layout].append(drain_rate(layout, args.n, args.batch))
    floor = statistics.median(rates["floor"])
    for layout in LAYOUTS:
        median = statistics.median(rates[layout])
        each = " ".join(f"{r:7.0f}" for r in rates[layout])
        print(
            f"{layout:8s} drain jobs/s {each}   median {median:7.0f}   {median / floor:.3f}x the floor",
            flush=True,
        )


if __name__ == "__main__":
    main()
