"""Flow control's cost on the claim (SPEC §24), side by side with the floor.

    python benches/limits.py [-n 3000] [--rounds 5] [--engines sqlite,postgres]

Each round drains N jobs one at a time (claim, read the payload, ack), in turn:
the raw floor (compare.py's per-op claim UPDATE ... RETURNING and DELETE on its
one-index table), alkstore on a queue without limits, and alkstore on queues
with each kind of limit that never binds a lone consumer: ``concurrency=8``,
``rate=(10**9, 1.0)`` and ``group_concurrency=8`` with every job in one of 16
groups. Prints each round and, per row, the median of its per-round ratios to
the floor. Goals: a limited queue >= 0.7x the floor's plain claim; a queue
without limits keeps its SPEC §14 ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable

import alkstore

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
PAYLOAD = {"to": "alice@example.com", "n": 1}
TEXT = json.dumps(PAYLOAD)

#: Row name -> (set_limits arguments, whether jobs carry a group).
LIMITED: dict[str, tuple[dict[str, object], bool]] = {
    "alkstore": ({}, False),
    "concurrency=8": ({"concurrency": 8}, False),
    "rate=1e9/1s": ({"rate": (10**9, 1.0)}, False),
    "group_concurrency=8": ({"group_concurrency": 8}, True),
}


def tmpdb() -> str:
    return os.path.join(tempfile.mkdtemp(prefix="bench-limits-"), "q.db")


def raw_sqlite(n: int) -> float:
    db = sqlite3.connect(tmpdb(), isolation_level=None)
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
        "WHERE id=(SELECT id FROM q WHERE queue='e' AND state='pending' AND run_at<=unixepoch() "
        "ORDER BY priority DESC, run_at, id LIMIT 1) RETURNING id, payload"
    )
    done, t = 0, time.perf_counter()
    while (r := db.execute(claim).fetchone()) is not None:
        json.loads(r[1])
        db.execute("DELETE FROM q WHERE id=? AND worker='w' AND state='processing'", (r[0],))
        done += 1
    seconds = time.perf_counter() - t
    assert done == n
    db.close()
    return n / seconds


def raw_postgres(n: int) -> float:
    import psycopg

    table = f"bench_limits_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(DSN, autocommit=True) as pg:
        pg.execute(
            f"CREATE TABLE {table}(id bigserial primary key, queue text, payload json, state text default "
            "'pending', priority int default 0, run_at bigint default extract(epoch from now())::bigint, "
            "worker text, deadline bigint, attempts int default 0)"
        )
        pg.execute(f"CREATE INDEX ON {table}(queue, priority DESC, run_at, id) WHERE state='pending'")
        pg.execute(
            f"INSERT INTO {table}(queue,payload) SELECT 'e', %s FROM generate_series(1, %s)", (TEXT, n)
        )
        claim = (
            f"UPDATE {table} SET state='processing', worker='w', attempts=attempts+1,"
            f" deadline=extract(epoch from now())::bigint+300 WHERE id=(SELECT id FROM {table}"
            " WHERE queue='e' AND state='pending' AND run_at<=extract(epoch from now())::bigint"
            " ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, payload"
        )
        done, t = 0, time.perf_counter()
        while (r := pg.execute(claim, prepare=True).fetchone()) is not None:
            pg.execute(f"DELETE FROM {table} WHERE id=%s AND worker='w'", (r[0],), prepare=True)
            done += 1
        seconds = time.perf_counter() - t
        pg.execute(f"DROP TABLE {table}")
    assert done == n
    return n / seconds


def alk(engine: str, n: int, limits: dict[str, object], grouped: bool) -> float:
    where = tmpdb() if engine == "sqlite" else DSN
    with alkstore.open(where) as store:
        q = store.queue("bench-" + uuid.uuid4().hex[:8])
        if limits:
            q.set_limits(**limits)  # type: ignore[arg-type]
        for i in range(0, n, 1000):
            k = min(1000, n - i)
            groups = [f"g{(i + j) % 16}" for j in range(k)] if grouped else None
            q.enqueue_many([PAYLOAD] * k, group=groups)
        done, t = 0, time.perf_counter()
        while (job := q.claim("w")) is not None:
            _ = job.payload
            job.ack()
            done += 1
        seconds = time.perf_counter() - t
        if engine == "postgres":
            q.purge_dead()
    assert done == n, done
    return n / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--engines", default="sqlite,postgres")
    args = ap.parse_args()
    for engine in args.engines.split(","):
        floor: Callable[[int], float] = raw_sqlite if engine == "sqlite" else raw_postgres
        ratios: dict[str, list[float]] = {name: [] for name in LIMITED}
        for r in range(args.rounds):
            base = floor(args.n)
            line = [f"{engine} round {r + 1}: floor {base:7.0f}/s"]
            for name, (limits, grouped) in LIMITED.items():
                rate = alk(engine, args.n, limits, grouped)
                ratios[name].append(rate / base)
                line.append(f"{name} {rate:7.0f}/s ({rate / base:.2f}x)")
            print("  ".join(line), flush=True)
        for name, rs in ratios.items():
            print(
                f"{engine:9s} {name:20s} median {statistics.median(rs):.2f}x the floor's plain claim",
                flush=True,
            )


if __name__ == "__main__":
    main()
