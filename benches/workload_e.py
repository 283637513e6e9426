"""Workload E (SPEC §20), first version: drain with W consumer processes while
a producer enqueues, against the raw-SQL floor, with the whole machine's CPU.

    python benches/workload_e.py [-n 4000] [--widths 1,2,4,8] [--engines sqlite,postgres]

For each engine and width W: N jobs are enqueued first, then W consumer
processes start together while one producer process enqueues N/4 more (one
commit each). The clock runs from the release of the consumers until the
queue is empty and the producer done. Rows:

- ``raw``: consumers loop the floor's statements (the claim UPDATE ...
  RETURNING, SKIP LOCKED on Postgres, then DELETE), as compare.py's floor;
- ``worker``: each consumer process runs ``alkstore.Worker(concurrency=1)``;
- ``threads`` (W = 8 only): one process with ``Worker(concurrency=8)``.

Jobs/s, ratio to ``raw`` at the same width, and CPU-seconds per 1,000 jobs of
the whole machine (/proc/stat, so the Postgres server counts). Peers are not
in this first version (issue 16).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
TEXT = json.dumps({"to": "alice@example.com", "n": 1})
TICK = os.sysconf("SC_CLK_TCK")


def busy_s() -> float:
    """Busy CPU seconds of the whole machine since boot (all cores)."""
    with open("/proc/stat", encoding="ascii") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / TICK  # minus idle and iowait


# ------------------------------------------------------------------ raw floor
def raw_setup(engine: str, where: str, n: int) -> None:
    if engine == "sqlite":
        db = sqlite3.connect(where, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "CREATE TABLE q(id INTEGER PRIMARY KEY, queue TEXT, payload TEXT, state TEXT DEFAULT 'pending',"
            " priority INT DEFAULT 0, run_at INT, worker TEXT, deadline INT, attempts INT DEFAULT 0)"
        )
        db.execute("CREATE INDEX q_ready ON q(queue, priority DESC, run_at, id) WHERE state='pending'")
        db.executemany("INSERT INTO q(queue,payload,run_at) VALUES ('e',?,unixepoch())", [(TEXT,)] * n)
        db.close()
        return
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as pg:
        pg.execute(f"DROP TABLE IF EXISTS {where}")
        pg.execute(
            f"CREATE TABLE {where}(id bigserial primary key, queue text, payload json,"
            " state text default 'pending', priority int default 0,"
            " run_at bigint default extract(epoch from now())::bigint, worker text,"
            " deadline bigint, attempts int default 0)"
        )
        pg.execute(f"CREATE INDEX ON {where}(queue, priority DESC, run_at, id) WHERE state='pending'")
        with pg.cursor() as c:
            c.executemany(f"INSERT INTO {where}(queue,payload) VALUES ('e',%s)", [(TEXT,)] * n)


def raw_conn(
    engine: str, where: str
) -> tuple[Callable[[str, tuple[object, ...]], list[tuple[object, ...]]], str]:
    if engine == "sqlite":
        db = sqlite3.connect(where, isolation_level=None, timeout=30)
        db.execute("PRAGMA synchronous=NORMAL")
        return (lambda sql, args: db.execute(sql.replace("%s", "?"), args).fetchall()), "q"
    import psycopg

    pg = psycopg.connect(DSN, autocommit=True)
    return (
        lambda sql, args: (
            pg.execute(sql, args, prepare=True).fetchall()
            if "RETURNING" in sql or sql.startswith("SELECT")
            else (pg.execute(sql, args, prepare=True), [])[1]
        )
    ), where


def raw_claim_sql(engine: str, t: str) -> str:
    now = "unixepoch()" if engine == "sqlite" else "extract(epoch from now())::bigint"
    lock = "" if engine == "sqlite" else " FOR UPDATE SKIP LOCKED"
    return (
        f"UPDATE {t} SET state='processing', worker=%s, deadline={now}+300, attempts=attempts+1 WHERE id=("
        f"SELECT id FROM {t} WHERE queue='e' AND state='pending' AND run_at<={now} "
        f"ORDER BY priority DESC, run_at, id LIMIT 1{lock}) RETURNING id, payload"
    )


def raw_consumer(engine: str, where: str, go: mp.Event, stop: mp.Event) -> None:  # type: ignore[valid-type]
    run, t = raw_conn(engine, where)
    claim, me = raw_claim_sql(engine, t), f"w{os.getpid()}"
    go.wait()
    while True:
        r = run(claim, (me,))
        if not r:
            if stop.is_set():
                return
            time.sleep(0.001)
            continue
        json.loads(r[0][1]) if isinstance(r[0][1], str) else r[0][1]
        run(f"DELETE FROM {t} WHERE id=%s AND worker=%s", (r[0][0], me))


def raw_producer(engine: str, where: str, n: int, go: mp.Event) -> None:  # type: ignore[valid-type]
    run, t = raw_conn(engine, where)
    now = "unixepoch()" if engine == "sqlite" else "extract(epoch from now())::bigint"
    go.wait()
    for _ in range(n):
        run(f"INSERT INTO {t}(queue,payload,run_at) VALUES ('e',%s,{now})", (TEXT,))


def raw_left(engine: str, where: str) -> int:
    run, t = raw_conn(engine, where)
    return int(run(f"SELECT count(*) FROM {t}", ())[0][0])  # type: ignore[call-overload]


# ------------------------------------------------------------------ alkstore
def open_store(engine: str, where: str):  # type: ignore[no-untyped-def]
    import alkstore

    return alkstore.open(where) if engine == "sqlite" else alkstore.open(DSN, schema=where)


def alk_setup(engine: str, where: str, n: int) -> None:
    with open_store(engine, where) as s:
        q = s.queue("e")
        for i in range(0, n, 1000):
            q.enqueue_many([{"to": "alice@example.com", "n": 1}] * min(1000, n - i))


def alk_consumer(engine: str, where: str, go: mp.Event, stop: mp.Event, threads: int) -> None:  # type: ignore[valid-type]
    import alkstore

    store = open_store(engine, where)
    w = alkstore.Worker(store, concurrency=threads, worker_id=f"w{os.getpid()}")
    w.handler("e")(lambda payload, job: None)
    go.wait()
    # The parent sends SIGTERM once the queue is empty: the Worker's clean stop.
    w.run()
    store.close()


def alk_producer(engine: str, where: str, n: int, go: mp.Event) -> None:  # type: ignore[valid-type]
    with open_store(engine, where) as s:
        q = s.queue("e")
        go.wait()
        for _ in range(n):
            q.enqueue({"to": "alice@example.com", "n": 1})


def alk_left(engine: str, where: str) -> int:
    with open_store(engine, where) as s:
        st = s.queue("e").stats()
        return st.pending + st.scheduled + st.processing


# ------------------------------------------------------------------ the run
def one(kind: str, engine: str, width: int, threads: int, n: int) -> tuple[float, float]:
    extra = n // 4
    where = (
        os.path.join(tempfile.mkdtemp(prefix="bench-e-"), "e.db")
        if engine == "sqlite"
        else f"bench_e_{uuid.uuid4().hex[:8]}"
    )
    (raw_setup if kind == "raw" else alk_setup)(engine, where, n)
    ctx = mp.get_context("spawn")
    go, stop = ctx.Event(), ctx.Event()
    if kind == "raw":
        consumers = [ctx.Process(target=raw_consumer, args=(engine, where, go, stop)) for _ in range(width)]
        producer = ctx.Process(target=raw_producer, args=(engine, where, extra, go))
    else:
        consumers = [
            ctx.Process(target=alk_consumer, args=(engine, where, go, stop, threads)) for _ in range(width)
        ]
        producer = ctx.Process(target=alk_producer, args=(engine, where, extra, go))
    for p in [*consumers, producer]:
        p.start()
    time.sleep(1.5)  # every process imported and connected
    left = raw_left if kind == "raw" else alk_left
    cpu0, t0 = busy_s(), time.perf_counter()
    go.set()
    producer.join()
    while left(engine, where) > 0:
        time.sleep(0.005)
    wall, cpu = time.perf_counter() - t0, busy_s() - cpu0
    stop.set()
    for p in consumers:
        if kind != "raw" and p.pid is not None:
            os.kill(p.pid, signal.SIGTERM)
        p.join(30)
    if engine == "postgres":
        import psycopg

        with psycopg.connect(DSN, autocommit=True) as pg:
            pg.execute(
                f"DROP TABLE IF EXISTS {where}"
                if kind == "raw"
                else f'DROP SCHEMA IF EXISTS "{where}" CASCADE'
            )
    total = n + extra
    return total / wall, cpu / total * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=4000)
    ap.add_argument("--widths", default="1,2,4,8")
    ap.add_argument("--engines", default="sqlite,postgres")
    args = ap.parse_args()
    print("E       engine    width  kind       jobs/s   ratio  CPU-s/1k jobs (whole machine)", flush=True)
    for engine in args.engines.split(","):
        for width in [int(w) for w in args.widths.split(",")]:
            runs = [("raw", width, 1), ("worker", width, 1)]
            if width == 8:
                runs.append(("threads", 1, 8))
            floor = 0.0
            for kind, procs, threads in runs:
                rate, cpu = one("raw" if kind == "raw" else "alkstore", engine, procs, threads, args.n)
                floor = floor or rate
                print(
                    f"E       {engine:9s} {width:5d}  {kind:8s} {rate:8.0f}  {rate / floor:5.2f}x  {cpu:6.3f}",  # noqa: E501
                    flush=True,
                )


if __name__ == "__main__":
    main()
