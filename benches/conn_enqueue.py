"""`enqueue(conn=...)` per op on the application's psycopg connection, against the floor.

The floor is a bare psycopg `INSERT ... RETURNING id` into a plain table on the same
connection; both sides commit every operation. Issue 13 asks for >= 0.7x.

    python benches/conn_enqueue.py [N]     # uses ALKSTORE_TEST_DATABASE_URL
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid

import psycopg

import alkstore

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
PAYLOAD = {"to": "alice@example.com", "n": 1}
TEXT = '{"to": "alice@example.com", "n": 1}'


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    schema = "bench_" + uuid.uuid4().hex[:8]
    ratios = []
    try:
        with alkstore.open(DSN, schema=schema) as store, psycopg.connect(DSN) as c:
            q = store.queue("bench")
            c.execute(f'CREATE TABLE "{schema}".raw (id bigserial PRIMARY KEY, queue text, payload text)')
            c.commit()
            raw_sql = f'INSERT INTO "{schema}".raw (queue, payload) VALUES (%s, %s) RETURNING id'
            for r in range(5):
                t = time.perf_counter()
                for _ in range(n):
                    c.execute(raw_sql, ("bench", TEXT)).fetchone()
                    c.commit()
                raw = n / (time.perf_counter() - t)
                t = time.perf_counter()
                for _ in range(n):
                    q.enqueue(PAYLOAD, conn=c)
                    c.commit()
                alk = n / (time.perf_counter() - t)
                ratios.append(alk / raw)
                print(f"round {r + 1}: raw {raw:.0f}/s  enqueue(conn=) {alk:.0f}/s  ratio {alk / raw:.2f}")
        print(f"median ratio {statistics.median(ratios):.2f}")
    finally:
        with psycopg.connect(DSN, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    main()
