"""Workload E (SPEC §20): drain with W consumer processes while a producer
enqueues, alkstore's Worker side by side with the raw-SQL floor and the peers,
with the whole machine's CPU per job.

    python benches/workload_e.py [-n 4000] [--widths 1,2,4,8] [--engines sqlite,postgres]
                                 [--only raw,alkstore,...] [--rounds R] [--oban-python PATH]

For each engine, width W and kind: N jobs are enqueued first, then W consumer
processes start together while one producer process enqueues N/4 more (one
commit each). The clock runs from the release of the consumers until the
queue is empty and the producer done. Kinds:

- ``raw``: the floor. Consumers loop compare.py's statements (the claim
  UPDATE ... RETURNING, SKIP LOCKED on Postgres, then DELETE).
- ``alkstore``: each consumer process runs ``alkstore.Worker(concurrency=1)``
  with a handler that does nothing; ``alkstore-threads`` (W = 8 only) is one
  process running ``Worker(concurrency=8)``.
- ``alkstore-tasks``: the same with a task registry (SPEC §22): one task that
  does nothing, ``tasks.worker(concurrency=1)`` per consumer process, and a
  producer that calls ``task.enqueue(**payload)`` (binding and JSON check
  included). Its row also prints its rate and CPU as a ratio to the
  ``alkstore`` row of the same width and round.
- ``alkstore-limited``: the ``alkstore`` kind on a queue with
  ``concurrency=W`` at W consumer processes (SPEC §24: a limit that lets
  every worker run costs little), with the same ratio to ``alkstore``.
- SQLite peers ``honker``, ``huey``, ``litequeue``: each consumer loops the
  library's claim and ack calls, as compare.py does (huey's dequeue deletes:
  it has no ack). A bare loop has no worker machinery, so this flatters them.
  huey and litequeue get the floor's 30 s busy timeout (their 5 s default
  fails a producer under 8 consumers).
- Postgres peers: ``pgqueuer`` loops its dequeue and log_jobs queries (as
  compare.py); ``procrastinate`` and ``oban`` run the library's own worker
  with concurrency 1 per process (oban needs Python >= 3.12: ``--oban-python``
  names that interpreter, with ``oban`` installed; default ``$OBAN_PYTHON``).

Every process is a subprocess of this script (``--child``), so a peer can run
under another interpreter. Printed per row: jobs/s, the ratio to ``raw`` at
the same width, and CPU-seconds per 1,000 jobs of the whole machine
(/proc/stat, so the database server counts) with its ratio to ``raw``, then the
client's CPU-seconds per 1,000 jobs: the producer's and consumers' own
(/proc/PID/stat), which other load on the machine does not inflate. A peer
that is missing or fails prints one line saying why; the others still run.
``--rounds R`` runs every width R times, the kinds in turn each round, and
ends with the median of each kind's per-round ratios to ``raw`` and of the
``alkstore-tasks`` / ``alkstore`` ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
PAYLOAD = {"to": "alice@example.com", "n": 1}
TEXT = json.dumps(PAYLOAD)
TICK = os.sysconf("SC_CLK_TCK")
KINDS = {
    "sqlite": ["raw", "alkstore", "alkstore-tasks", "alkstore-limited", "honker", "huey", "litequeue"],
    "postgres": [
        "raw",
        "alkstore",
        "alkstore-tasks",
        "alkstore-limited",
        "pgqueuer",
        "procrastinate",
        "oban",
    ],
}
#: The one task of ``alkstore-tasks``, and the payload its ``enqueue`` writes.
TASK = "e_work"
TASK_PAYLOAD = {"task": TASK, "args": [], "kwargs": PAYLOAD}
Run = Callable[[], None]


def busy_s() -> float:
    """Busy CPU seconds of the whole machine since boot (all cores)."""
    with open("/proc/stat", encoding="ascii") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / TICK  # minus idle and iowait


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime: fields 14 and 15


def poll(claim: Callable[[], bool]) -> None:
    """Loop a claim-and-ack step forever, sleeping 1 ms when it found nothing."""
    while True:
        if not claim():
            time.sleep(0.001)


# ------------------------------------------------------------------ raw floor
def raw_sql(engine: str, where: str) -> tuple[Callable[..., list[tuple[Any, ...]]], str, str]:
    if engine == "sqlite":
        db = sqlite3.connect(where, isolation_level=None, timeout=30)
        db.execute("PRAGMA synchronous=NORMAL")
        return (lambda sql, *a: db.execute(sql.replace("%s", "?"), a).fetchall()), "q", "unixepoch()"
    import psycopg

    pg = psycopg.connect(DSN, autocommit=True)

    def run(sql: str, *a: object) -> list[tuple[Any, ...]]:
        cur = pg.execute(sql, a, prepare=True)
        return cur.fetchall() if cur.description else []

    return run, where, "extract(epoch from now())::bigint"


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
        return
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as pg:
        pg.execute(
            f"CREATE TABLE {where}(id bigserial primary key, queue text, payload json,"
            " state text default 'pending', priority int default 0,"
            " run_at bigint default extract(epoch from now())::bigint, worker text,"
            " deadline bigint, attempts int default 0)"
        )
        pg.execute(f"CREATE INDEX ON {where}(queue, priority DESC, run_at, id) WHERE state='pending'")
        with pg.cursor() as c:
            c.executemany(f"INSERT INTO {where}(queue,payload) VALUES ('e',%s)", [(TEXT,)] * n)


def raw_producer(engine: str, where: str) -> Run:
    run, t, now = raw_sql(engine, where)
    return lambda: run(f"INSERT INTO {t}(queue,payload,run_at) VALUES ('e',%s,{now})", TEXT) and None


def raw_consumer(engine: str, where: str, threads: int) -> Run:
    run, t, now = raw_sql(engine, where)
    lock = "" if engine == "sqlite" else " FOR UPDATE SKIP LOCKED"
    claim_sql = (
        f"UPDATE {t} SET state='processing', worker=%s, deadline={now}+300, attempts=attempts+1 WHERE id=("
        f"SELECT id FROM {t} WHERE queue='e' AND state='pending' AND run_at<={now} "
        f"ORDER BY priority DESC, run_at, id LIMIT 1{lock}) RETURNING id, payload"
    )
    me = f"w{os.getpid()}"

    def step() -> bool:
        r = run(claim_sql, me)
        if not r:
            return False
        json.loads(r[0][1]) if isinstance(r[0][1], str) else r[0][1]
        run(f"DELETE FROM {t} WHERE id=%s AND worker=%s", r[0][0], me)
        return True

    return lambda: poll(step)


# ------------------------------------------------------------------ alkstore
def alk_open(engine: str, where: str) -> Any:
    import alkstore

    return alkstore.open(where) if engine == "sqlite" else alkstore.open(DSN, schema=where)


def alk_setup(engine: str, where: str, n: int) -> None:
    with alk_open(engine, where) as s:
        q = s.queue("e")
        for i in range(0, n, 1000):
            q.enqueue_many([PAYLOAD] * min(1000, n - i))


def alk_producer(engine: str, where: str) -> Run:
    q = alk_open(engine, where).queue("e")
    return lambda: q.enqueue(PAYLOAD) and None


def alk_consumer(engine: str, where: str, threads: int) -> Run:
    import alkstore

    w = alkstore.Worker(alk_open(engine, where), concurrency=threads, worker_id=f"w{os.getpid()}")
    w.handler("e")(lambda payload, job: None)
    return w.run  # SIGTERM is the Worker's clean stop


# ------------------------------------------------------------------ alkstore tasks
def tasks_registry(store: Any) -> tuple[Any, Any]:
    """A registry with the one task, doing what the plain Worker's handler does."""
    import alkstore

    tasks = alkstore.Tasks(store)

    @tasks.task(queue="e", name=TASK)
    def work(to: str, n: int) -> None:
        return None

    return tasks, work


def tasks_setup(engine: str, where: str, n: int) -> None:
    with alk_open(engine, where) as s:
        _, work = tasks_registry(s)
        work.enqueue(**PAYLOAD)  # the payload the producer's enqueue writes, checked once
        q = s.queue("e")
        (job,) = q.live_jobs(limit=1)
        assert job.payload == TASK_PAYLOAD, job.payload
        for i in range(1, n, 1000):
            q.enqueue_many([TASK_PAYLOAD] * min(1000, n - i))


def tasks_producer(engine: str, where: str) -> Run:
    _, work = tasks_registry(alk_open(engine, where))
    return lambda: work.enqueue(**PAYLOAD) and None


def tasks_consumer(engine: str, where: str, threads: int) -> Run:
    tasks, _ = tasks_registry(alk_open(engine, where))
    return tasks.worker(concurrency=threads, worker_id=f"w{os.getpid()}").run


# ------------------------------------------------------------------ SQLite peers
def honker_queue(where: str) -> Any:
    import honker

    return honker.open(where).queue("e")


def honker_setup(engine: str, where: str, n: int) -> None:
    q = honker_queue(where)
    for _ in range(n):
        q.enqueue(PAYLOAD)


def honker_producer(engine: str, where: str) -> Run:
    q = honker_queue(where)
    return lambda: q.enqueue(PAYLOAD) and None


def honker_consumer(engine: str, where: str, threads: int) -> Run:
    q, me = honker_queue(where), f"w{os.getpid()}"

    def step() -> bool:
        job = q.claim_one(me)
        if job is None:
            return False
        _ = job.payload
        job.ack()
        return True

    return lambda: poll(step)


def huey_storage(where: str) -> Any:
    from huey import SqliteHuey

    return SqliteHuey(filename=where, timeout=30).storage


def huey_setup(engine: str, where: str, n: int) -> None:
    s = huey_storage(where)
    for _ in range(n):
        s.enqueue(TEXT.encode())


def huey_producer(engine: str, where: str) -> Run:
    s = huey_storage(where)
    return lambda: s.enqueue(TEXT.encode())


def huey_consumer(engine: str, where: str, threads: int) -> Run:
    s = huey_storage(where)
    return lambda: poll(lambda: s.dequeue() is not None)


def litequeue_setup(engine: str, where: str, n: int) -> None:
    from litequeue import LiteQueue

    q = LiteQueue(where, timeout=30)
    for _ in range(n):
        q.put(TEXT)


def litequeue_producer(engine: str, where: str) -> Run:
    from litequeue import LiteQueue

    q = LiteQueue(where, timeout=30)
    return lambda: q.put(TEXT) and None


def litequeue_consumer(engine: str, where: str, threads: int) -> Run:
    from litequeue import LiteQueue

    q = LiteQueue(where, timeout=30)

    def step() -> bool:
        m = q.pop()
        if m is None:
            return False
        json.loads(m.data)
        q.done(m.message_id)
        return True

    return lambda: poll(step)


# ------------------------------------------------------------------ Postgres peers
async def pgqueuer_queries(where: str) -> Any:
    import asyncpg
    from pgqueuer.queries import Queries

    conn = await asyncpg.connect(DSN, server_settings={"search_path": where})
    return Queries.from_asyncpg_connection(conn)


def pgqueuer_setup(engine: str, where: str, n: int) -> None:
    async def go() -> None:
        q = await pgqueuer_queries(where)
        await q.install()
        for i in range(0, n, 1000):
            k = min(1000, n - i)
            await q.enqueue(["e"] * k, [TEXT.encode()] * k, [0] * k)

    asyncio.run(go())


def pgqueuer_producer(engine: str, where: str) -> Run:
    loop = asyncio.new_event_loop()
    q = loop.run_until_complete(pgqueuer_queries(where))
    return lambda: loop.run_until_complete(q.enqueue("e", TEXT.encode())) and None


def pgqueuer_consumer(engine: str, where: str, threads: int) -> Run:
    from pgqueuer.queries import EntrypointExecutionParameter

    async def go() -> None:
        q = await pgqueuer_queries(where)
        eps = {"e": EntrypointExecutionParameter(concurrency_limit=0)}
        qm = uuid.uuid4()
        while True:
            jobs = await q.dequeue(1, eps, qm, None, timedelta(seconds=30))
            if not jobs:
                await asyncio.sleep(0.001)
                continue
            json.loads(jobs[0].payload or b"{}")
            await q.log_jobs([(jobs[0], "successful", None)])

    return lambda: asyncio.run(go())


def procrastinate_app(where: str, sync: bool) -> Any:
    import procrastinate as pc

    kwargs = {"options": f"-c search_path={where}"}
    connector = (
        pc.SyncPsycopgConnector(conninfo=DSN, kwargs=kwargs)
        if sync
        else pc.PsycopgConnector(conninfo=DSN, kwargs=kwargs)
    )
    app = pc.App(connector=connector)

    @app.task(queue="e", name="e_work")
    def work(to: str, n: int) -> None:
        pass

    return app


def procrastinate_setup(engine: str, where: str, n: int) -> None:
    app = procrastinate_app(where, sync=True)
    with app.open():
        app.schema_manager.apply_schema()
        task = app.tasks["e_work"]
        for i in range(0, n, 1000):
            task.batch_defer(*[PAYLOAD] * min(1000, n - i))


def procrastinate_producer(engine: str, where: str) -> Run:
    app = procrastinate_app(where, sync=True)
    app.open()
    task = app.tasks["e_work"]
    return lambda: task.defer(**PAYLOAD) and None


def procrastinate_consumer(engine: str, where: str, threads: int) -> Run:
    async def go() -> None:
        app = procrastinate_app(where, sync=False)
        async with app.open_async():
            await app.run_worker_async(
                queues=["e"], wait=True, concurrency=threads, install_signal_handlers=False
            )

    return lambda: asyncio.run(go())


def oban_pool(loop: asyncio.AbstractEventLoop) -> Any:
    from oban import Oban

    return loop.run_until_complete(Oban.create_pool(DSN, min_size=1, max_size=2))


def oban_worker() -> Any:
    from oban import worker

    @worker(queue="e")
    class EWork:
        async def process(self, job: Any) -> None:
            return None

    return EWork


def oban_setup(engine: str, where: str, n: int) -> None:
    from oban import Oban
    from oban.schema import install

    async def go() -> None:
        pool = await Oban.create_pool(DSN, min_size=1, max_size=2)
        async with pool.connection() as c:
            await c.execute(f'CREATE SCHEMA "{where}"')
        await install(pool, prefix=where)
        o, w = Oban(pool=pool, prefix=where), oban_worker()
        for i in range(0, n, 1000):
            await o.enqueue_many([w.new(PAYLOAD) for _ in range(min(1000, n - i))])
        await pool.close()

    asyncio.run(go())


def oban_producer(engine: str, where: str) -> Run:
    from oban import Oban

    loop = asyncio.new_event_loop()
    o, w = Oban(pool=oban_pool(loop), prefix=where), oban_worker()
    return lambda: loop.run_until_complete(o.enqueue(w.new(PAYLOAD))) and None


def oban_consumer(engine: str, where: str, threads: int) -> Run:
    from oban import Oban

    oban_worker()

    async def go() -> None:
        pool = await Oban.create_pool(DSN, min_size=1, max_size=threads + 2)
        async with Oban(pool=pool, prefix=where, queues={"e": threads}):
            await asyncio.Event().wait()

    return lambda: asyncio.run(go())


# What the parent counts to know the queue is drained, per kind (`{t}`: the table or schema).
LEFT_SQL = {
    ("raw", "sqlite"): "SELECT count(*) FROM q",
    ("raw", "postgres"): "SELECT count(*) FROM {t}",
    ("honker", "sqlite"): "SELECT count(*) FROM _honker_live",
    ("huey", "sqlite"): "SELECT count(*) FROM task",
    ("litequeue", "sqlite"): "SELECT count(*) FROM Queue WHERE status NOT IN (2, 3)",
    ("pgqueuer", "postgres"): "SELECT count(*) FROM {t}.pgqueuer",
    ("procrastinate", "postgres"): "SELECT count(*) FROM {t}.procrastinate_jobs"
    " WHERE status IN ('todo','doing')",
    ("oban", "postgres"): 'SELECT count(*) FROM "{t}".oban_jobs'
    " WHERE state IN ('available','scheduled','executing','retryable')",
}
ROLES: dict[str, tuple[Callable[..., None], Callable[..., Run], Callable[..., Run]]] = {
    "raw": (raw_setup, raw_producer, raw_consumer),
    "alkstore": (alk_setup, alk_producer, alk_consumer),
    "alkstore-tasks": (tasks_setup, tasks_producer, tasks_consumer),
    "alkstore-limited": (alk_setup, alk_producer, alk_consumer),
    "honker": (honker_setup, honker_producer, honker_consumer),
    "huey": (huey_setup, huey_producer, huey_consumer),
    "litequeue": (litequeue_setup, litequeue_producer, litequeue_consumer),
    "pgqueuer": (pgqueuer_setup, pgqueuer_producer, pgqueuer_consumer),
    "procrastinate": (procrastinate_setup, procrastinate_producer, procrastinate_consumer),
    "oban": (oban_setup, oban_producer, oban_consumer),
}


def child(role: str, kind: str, engine: str, where: str, n: int, threads: int) -> None:
    """One process of a run: set up, or produce n jobs, or consume until killed."""
    setup, producer, consumer = ROLES[kind]
    if role == "setup":
        setup(engine, where, n)
        if kind == "alkstore-limited":  # `threads` carries the width here: a limit of W at W workers
            with alk_open(engine, where) as s:
                s.queue("e").set_limits(concurrency=threads)
        return
    step = producer(engine, where) if role == "producer" else consumer(engine, where, threads)
    print("ready", flush=True)
    sys.stdin.readline()  # the parent's go
    if role == "producer":
        before = os.times()
        for _ in range(n):
            step()
        after = os.times()
        print(f"cpu {after.user - before.user + after.system - before.system}", flush=True)
        os._exit(0)  # skip the peers' pool finalizers, which only print noise at exit
    step()


# ------------------------------------------------------------------ the parent
class Left:
    """Counts what is still to drain, with plain SQL, so any kind can be watched."""

    def __init__(self, kind: str, engine: str, where: str) -> None:
        key = ("raw", engine) if kind == "raw" else (kind, engine)
        if kind in ("alkstore", "alkstore-tasks", "alkstore-limited"):
            self.count = self._alkstore(engine, where)
            return
        sql = LEFT_SQL[key].format(t=where)
        if engine == "sqlite":
            db = sqlite3.connect(where, timeout=30)
            self.count = lambda: int(db.execute(sql).fetchone()[0])
        else:
            import psycopg

            pg = psycopg.connect(DSN, autocommit=True)
            self.count = lambda: int(pg.execute(sql).fetchone()[0])  # type: ignore[index]

    @staticmethod
    def _alkstore(engine: str, where: str) -> Callable[[], int]:
        q = alk_open(engine, where).queue("e")

        def count() -> int:
            st = q.stats()
            return int(st.pending + st.scheduled + st.processing)

        return count


def spawn(
    python: str, role: str, kind: str, engine: str, where: str, n: int, threads: int
) -> subprocess.Popen[str]:
    args = [python, os.path.abspath(__file__), "--child", role, kind, engine, where, str(n), str(threads)]
    return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def one(kind: str, engine: str, procs: int, threads: int, n: int, python: str) -> tuple[float, float, float]:
    """One point: jobs/s, and CPU-seconds per 1,000 jobs of the whole machine
    and of the client processes (producer and consumers)."""
    extra = n // 4
    tag = kind.replace("-threads", "")
    where = (
        os.path.join(tempfile.mkdtemp(prefix="bench-e-"), "e.db")
        if engine == "sqlite"
        else f"bench_e_{uuid.uuid4().hex[:8]}"
    )
    if engine == "postgres" and tag in ("pgqueuer", "procrastinate"):
        import psycopg

        with psycopg.connect(DSN, autocommit=True) as pg:
            pg.execute(f'CREATE SCHEMA "{where}"')
    procs_: list[subprocess.Popen[str]] = []
    try:
        setup = spawn(python, "setup", tag, engine, where, n, procs if tag == "alkstore-limited" else threads)
        if setup.wait() != 0:
            raise RuntimeError(f"setup exited {setup.returncode}")
        producer = spawn(python, "producer", tag, engine, where, extra, threads)
        consumers = [spawn(python, "consumer", tag, engine, where, 0, threads) for _ in range(procs)]
        procs_ = [producer, *consumers]
        for p in procs_:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a {tag} process did not start (exit {p.wait()})")
        left = Left(tag, engine, where)
        time.sleep(0.5)
        cpu0, t0 = busy_s(), time.perf_counter()
        client0 = sum(proc_cpu_s(p.pid) for p in consumers)
        for p in procs_:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        if producer.wait() != 0:
            raise RuntimeError(f"producer exited {producer.returncode}")
        assert producer.stdout is not None
        produced = producer.stdout.readline().split()
        if produced[:1] != ["cpu"]:
            raise RuntimeError(f"the producer did not report its CPU: {produced}")
        while left.count() > 0:
            time.sleep(0.005)
            if any(p.poll() is not None for p in procs_[1:]):
                raise RuntimeError("a consumer exited before the queue was drained")
        wall, cpu = time.perf_counter() - t0, busy_s() - cpu0
        client = float(produced[1]) + sum(proc_cpu_s(p.pid) for p in consumers) - client0
    finally:
        for p in procs_:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs_:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if engine == "postgres":
            import psycopg

            with psycopg.connect(DSN, autocommit=True) as pg:
                pg.execute(f"DROP TABLE IF EXISTS {where}")
                pg.execute(f'DROP SCHEMA IF EXISTS "{where}" CASCADE')
    total = n + extra
    return total / wall, cpu / total * 1000, client / total * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=4000)
    ap.add_argument("--widths", default="1,2,4,8")
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--only", default="", help="comma list of kinds (default: all)")
    ap.add_argument("--rounds", type=int, default=1, help="run each width this many times")
    ap.add_argument("--oban-python", default=os.environ.get("OBAN_PYTHON", ""))
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        role, kind, engine, where, n, threads = args.child
        child(role, kind, engine, where, int(n), int(threads))
        return
    only = [k for k in args.only.split(",") if k]
    print(
        "E  engine    width  kind               jobs/s  ratio  CPU-s/1k  ratio  client CPU-s/1k  ratio",
        flush=True,
    )
    # (engine, width, kind) -> the kind / alkstore ratios of rate, CPU and client CPU, per round
    task_ratios: dict[tuple[str, int, str], list[tuple[float, float, float]]] = {}
    # (engine, width, kind) -> its ratios to ``raw`` of rate, CPU and client CPU, per round
    floor_ratios: dict[tuple[str, int, str], list[tuple[float, float, float]]] = {}
    for engine in args.engines.split(","):
        for width in [int(w) for w in args.widths.split(",")]:
            for _ in range(args.rounds):
                runs = [(k, width, 1) for k in KINDS[engine]]
                if width == 8:
                    runs.insert(2, ("alkstore-threads", 1, 8))
                floor: tuple[float, float, float] | None = None
                plain: tuple[float, float, float] | None = None
                for kind, procs, threads in runs:
                    if only and kind != "raw" and kind.replace("-threads", "") not in only:
                        continue
                    python = args.oban_python if kind == "oban" else sys.executable
                    try:
                        if not python:
                            raise RuntimeError("no --oban-python (oban needs Python >= 3.12)")
                        rate, cpu, client = one(kind, engine, procs, threads, args.n, python)
                    except Exception as exc:  # a missing or broken peer must not stop the others
                        print(f"E  {engine:9s} {width:5d}  {kind:16s} unavailable: {exc}", flush=True)
                        continue
                    floor = floor or (rate, cpu, client)
                    if kind != "raw":
                        to_floor = (rate / floor[0], cpu / floor[1], client / floor[2])
                        floor_ratios.setdefault((engine, width, kind), []).append(to_floor)
                    vs = ""
                    if kind == "alkstore":
                        plain = (rate, cpu, client)
                    elif kind in ("alkstore-tasks", "alkstore-limited") and plain is not None:
                        ratio = (rate / plain[0], cpu / plain[1], client / plain[2])
                        task_ratios.setdefault((engine, width, kind), []).append(ratio)
                        vs = "  vs alkstore: rate {:4.2f}x, CPU {:4.2f}x, client CPU {:4.2f}x".format(*ratio)
                    print(
                        f"E  {engine:9s} {width:5d}  {kind:16s} {rate:7.0f}  {rate / floor[0]:4.2f}x"
                        f"  {cpu:8.3f}  {cpu / floor[1]:4.2f}x"
                        f"  {client:15.3f}  {client / floor[2]:4.2f}x{vs}",
                        flush=True,
                    )
    for against, table in (("raw", floor_ratios), ("alkstore", task_ratios)):
        for (engine, width, kind), ratios in table.items():
            print(f"E  {engine:9s} {width:5d}  {kind} / {against}, " + medians(ratios), flush=True)


def medians(ratios: list[tuple[float, float, float]]) -> str:
    """The median (min-max) of each column of per-round ratios: rate, CPU, client CPU."""
    cols = zip(("rate", "CPU", "client CPU"), zip(*ratios, strict=True), strict=True)
    shown = ", ".join(
        f"{name} {statistics.median(v):4.2f}x ({min(v):4.2f}-{max(v):4.2f})" for name, v in cols
    )
    return f"medians over {len(ratios)} round(s): {shown}"


if __name__ == "__main__":
    main()
