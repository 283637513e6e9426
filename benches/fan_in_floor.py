"""The floor under a fan-in parent's ack on SQLite (SPEC §25, issue 27).

    python benches/fan_in_floor.py [-n 3000] [--rounds 3]

Bare ``sqlite3``, no alkstore: a table shaped like alkstore's live jobs
(the same columns that matter, and its one index of live rows, migration 0018), WAL and
``synchronous=NORMAL`` as alkstore sets them. N plain rows and N parent rows
of one waiting child, deleted in turn, one autocommit DELETE each, in the
order ``benches/workflows.py`` uses; a parent's DELETE fires a trigger that
counts the child down by primary key, the least any implementation that
keeps the count on the child can write. Reported: the mean and the median
parent DELETE against the plain one. A plain DELETE writes two pages, a
parent's three (the child's row), so what alkstore's bookkeeping may add
is what is left between this ratio and the goal of 1.2x.

This is the floor of the count model alone: since migration 0019 a fan-in
over a run of ids (parents enqueued together, each with only this child)
keeps no count, and a parent's ack writes the pages a plain one does
(ADR 0029), so ``benches/workflows.py`` can measure below this ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time

PAYLOAD = '{"to": "alice@example.com", "n": 1}'


def one_round(n: int) -> tuple[float, float]:
    db = sqlite3.connect(os.path.join(tempfile.mkdtemp(prefix="bench-floor-"), "f.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT, state TEXT, payload TEXT, priority INT, "
        "run_at INT, deadline INT, worker TEXT, token INT, parents_left INT, sole INT)"
    )
    # alkstore's live index (migration 0018): pending, processing and waiting rows.
    db.execute("CREATE INDEX jobs_live ON jobs (queue, state DESC, deadline, priority DESC, run_at, id)")
    db.execute(
        "CREATE TRIGGER jobs_parent_acked AFTER DELETE ON jobs WHEN OLD.sole IS NOT NULL "
        "BEGIN UPDATE jobs SET parents_left = parents_left - 1 WHERE id = OLD.sole; END"
    )
    row = "INSERT INTO jobs (queue, state, payload, priority, run_at, deadline, worker, token, sole) "
    db.execute("BEGIN")
    for _ in range(n):
        db.execute(row + "VALUES ('plain', 'processing', ?, 0, 0, 100, 'w', 1, NULL)", (PAYLOAD,))
    for _ in range(n):
        db.execute(row + "VALUES ('parents', 'processing', ?, 0, 0, 100, 'w', 1, ?)", (PAYLOAD, 2 * n + 1))
    db.execute(
        "INSERT INTO jobs (queue, state, payload, priority, run_at, parents_left) "
        "VALUES ('child', 'waiting', '{}', 0, 0, ?)",
        (n,),
    )
    db.execute("COMMIT")
    ack = "DELETE FROM jobs WHERE id = ? AND state = 'processing' AND worker = 'w' AND token = 1"
    plain: list[float] = []
    parent: list[float] = []
    order = random.Random(n)
    for i in range(n):
        pair = [(plain, i + 1), (parent, n + i + 1)]
        if order.random() < 0.5:
            pair.reverse()
        for times, job in pair:
            t = time.perf_counter()
            db.execute(ack, (job,))
            times.append(time.perf_counter() - t)
    (left,) = db.execute("SELECT parents_left FROM jobs WHERE queue = 'child'").fetchone()
    assert left == 0, left
    db.close()
    return sum(parent) / sum(plain), statistics.median(parent) / statistics.median(plain)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    means, medians = [], []
    for r in range(args.rounds):
        mean, median = one_round(args.n)
        means.append(mean)
        medians.append(median)
        print(
            f"round {r + 1}: parent DELETE / plain DELETE: mean {mean:.2f}x, median {median:.2f}x", flush=True
        )
    print(
        f"medians of the rounds: mean {statistics.median(means):.2f}x, "
        f"median {statistics.median(medians):.2f}x"
    )


if __name__ == "__main__":
    main()
