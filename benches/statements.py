"""What unnamed statements cost per op (ADR 0030): named vs unnamed, direct and
through PgBouncer in transaction mode.

    python benches/statements.py [-n 5000] [--rounds 3]

Workload A's shape (SPEC §14) on one process and one connection: N enqueues, one
commit each; then N claim + ack, one job at a time. Printed per mode: microseconds
per enqueue and per claim+ack (the median of the rounds), and the ratio to the
named, direct mode of the same round. The modes:

- ``named``: the default, statements prepared once per connection (direct).
- ``unnamed``: ``statements="unnamed"`` (direct): Parse + Bind + Execute in one
  round trip, the server parses and plans every time.
- ``unnamed+pgbouncer``: the same through a private PgBouncer (transaction mode)
  in front of the same server: the pooler's hop on top.

The server is ``ALKSTORE_TEST_DATABASE_URL`` (default the local test database).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
PAYLOAD = {"to": "alice@example.com", "n": 1}


def one(url: str, n: int, **opts: object) -> tuple[float, float]:
    """Microseconds per enqueue and per claim+ack."""
    import alkstore

    schema = "b_" + uuid.uuid4().hex[:10]
    store = alkstore.open(url, schema=schema, max_connections=1, listen=False, **opts)  # type: ignore[arg-type]
    try:
        q = store.queue("e")
        for _ in range(50):  # warm: the connection, the statement cache / learned types
            q.enqueue(PAYLOAD)
        while (job := q.claim("w")) is not None:
            job.ack()
        t0 = time.perf_counter()
        for _ in range(n):
            q.enqueue(PAYLOAD)
        t1 = time.perf_counter()
        for _ in range(n):
            job = q.claim("w")
            assert job is not None
            job.ack()
        t2 = time.perf_counter()
        return (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6
    finally:
        store.close()
        import psycopg

        with psycopg.connect(DSN, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    from tests.pgbouncer import PgBouncer

    bouncer = PgBouncer(DSN, pool_size=4)
    modes = {
        "named": (DSN, {}),
        "unnamed": (DSN, {"statements": "unnamed"}),
        "unnamed+pgbouncer": (bouncer.url(), {"statements": "unnamed"}),
    }
    res: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    try:
        for _ in range(a.rounds):
            for m, (url, opts) in modes.items():
                res[m].append(one(url, a.n, **opts))
    finally:
        bouncer.close()
    base_e = statistics.median(r[0] for r in res["named"])
    base_c = statistics.median(r[1] for r in res["named"])
    print(f"# N={a.n}, {a.rounds} rounds, medians; one process, one connection")
    print(f"{'mode':<18} {'enqueue us':>10} {'vs named':>8} {'claim+ack us':>12} {'vs named':>8}")
    for m, rs in res.items():
        e = statistics.median(r[0] for r in rs)
        c = statistics.median(r[1] for r in rs)
        print(f"{m:<18} {e:>10.0f} {e / base_e:>8.2f} {c:>12.0f} {c / base_c:>8.2f}")


if __name__ == "__main__":
    main()
