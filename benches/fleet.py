"""Many worker processes on one Postgres, direct and through PgBouncer (SPEC §26).

    python benches/fleet.py [-n 20000] [--widths 8,32,64] [--routes direct,pgbouncer]
                            [--kinds raw,alkstore] [--max-connections 100] [--json OUT]

A private Postgres (initdb in a temporary directory, a free port, started with
``max_connections`` = 100 by default, so a fleet that over-subscribes it fails
loudly) and a private PgBouncer 1.x in transaction mode in front of it
(``default_pool_size`` 20). For each route, width W and kind, N jobs are enqueued
first; then W consumer processes are released together and the clock runs until
the queue is empty. Kinds:

- ``raw``: the floor. Each process loops the claim ``UPDATE ... FOR UPDATE SKIP
  LOCKED RETURNING`` and the ``DELETE`` of compare.py through psycopg, prepared
  statements when direct, unnamed ones (``prepare_threshold=None``) through the
  pooler, which keeps none across transactions.
- ``alkstore``: each process runs ``alkstore.Worker(concurrency=1)`` with a
  handler that records the job's id. Direct: ``max_connections=1`` and
  ``listen=False`` (64 processes each with a LISTEN session would need 128 of the
  server's 100). Pooled: ``statements="unnamed"``, ``max_connections=1``, wakes by
  LISTEN on a direct ``listen_url`` (64 + the pooler's 20 fit).

Printed per row: jobs/s, the ratio to ``raw`` on the same route and width, the
server's peak connection count during the drain (pg_stat_activity, sampled every
20 ms, this script's own sampler excluded), how many processes printed a
connection error, and whether every job was handled exactly once (alkstore: the
ids the handlers saw; raw: the ids the claims returned).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

PAYLOAD = {"to": "alice@example.com", "n": 1}


# ------------------------------------------------------------------ children
def child_raw(url: str, table: str, pooled: bool) -> None:
    import psycopg

    pg = psycopg.connect(url, autocommit=True, prepare_threshold=None if pooled else 0)
    me = f"w{os.getpid()}"
    claim = (
        f"UPDATE {table} SET state='processing', worker=%s, deadline=extract(epoch from now())::bigint+300,"
        f" attempts=attempts+1 WHERE id=(SELECT id FROM {table} WHERE queue='e' AND state='pending'"
        " AND run_at<=extract(epoch from now())::bigint ORDER BY priority DESC, run_at, id LIMIT 1"
        " FOR UPDATE SKIP LOCKED) RETURNING id, payload"
    )
    delete = f"DELETE FROM {table} WHERE id=%s AND worker=%s"
    print("ready", flush=True)
    sys.stdin.readline()
    seen: list[int] = []
    while True:
        row = pg.execute(claim, [me]).fetchone()
        if row is None:
            break
        seen.append(int(row[0]))
        pg.execute(delete, [row[0], me])
    print(json.dumps({"ids": seen}), flush=True)


def child_alkstore(url: str, schema: str, pooled: bool, direct: str) -> None:
    import alkstore

    opts: dict[str, Any] = {"schema": schema, "max_connections": 1}
    if pooled:
        opts.update(statements="unnamed", listen_url=direct)
    else:
        opts.update(listen=False, poll_interval_s=0.2)
    store = alkstore.open(url, **opts)
    seen: list[int] = []
    w = alkstore.Worker(store, concurrency=1, worker_id=f"w{os.getpid()}")
    w.handler("e")(lambda payload, job: seen.append(job.id))
    print("ready", flush=True)
    sys.stdin.readline()
    w.run()  # until SIGTERM
    store.close()
    print(json.dumps({"ids": seen}), flush=True)


# ------------------------------------------------------------------ parent
def setup(kind: str, direct: str, where: str, n: int) -> None:
    import psycopg

    if kind == "raw":
        with psycopg.connect(direct, autocommit=True) as pg:
            pg.execute(
                f"CREATE TABLE {where}(id bigserial primary key, queue text, payload json,"
                " state text default 'pending', priority int default 0,"
                " run_at bigint default extract(epoch from now())::bigint, worker text,"
                " deadline bigint, attempts int default 0)"
            )
            pg.execute(f"CREATE INDEX ON {where}(queue, priority DESC, run_at, id) WHERE state='pending'")
            with pg.cursor() as c:
                c.executemany(
                    f"INSERT INTO {where}(queue,payload) VALUES ('e',%s)", [(json.dumps(PAYLOAD),)] * n
                )
        return
    import alkstore

    with alkstore.open(direct, schema=where) as s:
        q = s.queue("e")
        for i in range(0, n, 1000):
            q.enqueue_many([PAYLOAD] * min(1000, n - i))


def remaining(admin: Any, kind: str, where: str) -> int:
    sql = f"SELECT count(*) FROM {where}" if kind == "raw" else f'SELECT count(*) FROM "{where}".jobs'
    return int(admin.execute(sql).fetchone()[0])


def sample_connections(admin_url: str, stop: threading.Event, peak: list[int]) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, application_name="fleet-sampler") as c:
        while not stop.is_set():
            row = c.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                " AND pid <> pg_backend_pid()"
            ).fetchone()
            peak[0] = max(peak[0], int(row[0]))
            stop.wait(0.02)


def run_one(kind: str, route: str, width: int, n: int, direct: str, pooled_url: str) -> dict[str, Any]:
    import psycopg

    where = "f_" + uuid.uuid4().hex[:10]
    setup(kind, direct, where, n)
    url = pooled_url if route == "pgbouncer" else direct
    argv = [sys.executable, __file__, "--child", kind, url, where, route, direct]
    procs = [
        subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(width)
    ]
    for p in procs:
        assert p.stdout is not None
        line = p.stdout.readline()
        if line.strip() != "ready":
            err = p.stderr.read() if p.stderr else ""
            for q in procs:
                q.kill()
            raise RuntimeError(f"a {kind} child did not start: {line!r} {err[-2000:]}")
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=sample_connections, args=(direct, stop, peak))
    sampler.start()
    with psycopg.connect(direct, autocommit=True, application_name="fleet-admin") as admin:
        t0 = time.perf_counter()
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        # Both kinds delete a job when done: the queue is drained when its table is empty.
        while remaining(admin, kind, where) > 0:
            time.sleep(0.01)
        elapsed = time.perf_counter() - t0
        # A raw consumer ends when its claim finds nothing; a Worker at SIGTERM.
        for p in procs:
            if kind != "raw" and p.poll() is None:
                p.send_signal(signal.SIGTERM)
    stop.set()
    sampler.join()
    ids: list[int] = []
    errors = 0
    for p in procs:
        out, err = p.communicate(timeout=120)
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if p.returncode != 0 or not lines:
            errors += 1
            sys.stderr.write(f"child exit {p.returncode}: {err[-1500:]}\n")
            continue
        if "connection" in err.lower() and "error" in err.lower():
            errors += 1
            sys.stderr.write(f"child connection error: {err[-1500:]}\n")
        ids.extend(json.loads(lines[-1])["ids"])
    with psycopg.connect(direct, autocommit=True) as admin:
        admin.execute(f"DROP TABLE IF EXISTS {where}" if kind == "raw" else f'DROP SCHEMA "{where}" CASCADE')
    return {
        "kind": kind,
        "route": route,
        "width": width,
        "jobs": n,
        "seconds": round(elapsed, 3),
        "jobs_per_s": round(n / elapsed, 1),
        "peak_connections": peak[0],
        "errors": errors,
        "handled": len(ids),
        "exactly_once": len(ids) == n and len(set(ids)) == n,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--widths", default="8,32,64")
    ap.add_argument("--routes", default="direct,pgbouncer")
    ap.add_argument("--kinds", default="raw,alkstore")
    ap.add_argument("--max-connections", type=int, default=100)
    ap.add_argument("--pooler-size", type=int, default=20)
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--child", nargs=5, metavar=("KIND", "URL", "WHERE", "ROUTE", "DIRECT"))
    a = ap.parse_args()
    if a.child:
        kind, url, where, route, direct = a.child
        if kind == "raw":
            child_raw(url, where, route == "pgbouncer")
        else:
            child_alkstore(url, where, route == "pgbouncer", direct)
        return

    from tests.pgbouncer import PgBouncer

    from soak_faults import PrivatePostgres

    logs = tempfile.mkdtemp(prefix="alkstore-fleet-")
    server = PrivatePostgres(logs, max_connections=a.max_connections)
    bouncer = PgBouncer(server.url, pool_size=a.pooler_size)
    rows: list[dict[str, Any]] = []
    try:
        print(
            f"# private Postgres max_connections={a.max_connections}; PgBouncer "
            f"pool_mode=transaction default_pool_size={a.pooler_size}; N={a.n}"
        )
        print(
            f"{'route':<10} {'W':>3} {'kind':<9} {'jobs/s':>9} {'vs raw':>7} "
            f"{'peak conns':>10} {'errors':>6} once"
        )
        for route in a.routes.split(","):
            for width in [int(w) for w in a.widths.split(",")]:
                raw_rate = None
                for kind in a.kinds.split(","):
                    r = run_one(kind, route, width, a.n, server.url, bouncer.url())
                    if kind == "raw":
                        raw_rate = r["jobs_per_s"]
                    r["vs_raw"] = round(r["jobs_per_s"] / raw_rate, 2) if raw_rate else None
                    rows.append(r)
                    ratio = f"{r['vs_raw']:.2f}" if r["vs_raw"] is not None else "-"
                    print(
                        f"{route:<10} {width:>3} {kind:<9} {r['jobs_per_s']:>9.0f} {ratio:>7} "
                        f"{r['peak_connections']:>10} {r['errors']:>6} {r['exactly_once']}",
                        flush=True,
                    )
    finally:
        bouncer.close()
        server.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
