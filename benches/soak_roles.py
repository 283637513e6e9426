"""The processes of the soak (SPEC §27), each started by ``benches/soak.py``:

    python benches/soak_roles.py ROLE CONFIG_JSON INDEX

- ``producer``: transactions that write ledger rows (the business write) and, in
  the same transaction, enqueue jobs, outbox messages and stream events; some are
  rolled back on purpose. Half go through ``store.transaction()``, half through
  the application's own driver connection with ``conn=``.
- ``worker``: an ``alkstore.Worker`` whose handlers record each execution (a row
  committed when the handler starts) and settle the job in the same transaction
  as their own business write (the row's end, outcome and whether the ack landed).
- ``aux``: the schedule runner, the stream subscriber (one row per event seen)
  and the outbox relay (one row per delivery).
- ``bulk`` (SQLite): big writes through the application's own ``sqlite3``
  connection, each with a job enqueued by ``conn=``, and explicit checkpoints of
  the grown WAL: what the fault injector kills mid-checkpoint.

Cooperation with the fault injector goes through a small file per process (its
"flag"): a producer that finds a kill requested parks *inside* its open
transaction and says so, so the kill -9 that follows lands mid-transaction for
certain; the bulk process says when its checkpoint is running.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import alkstore

# Flag bytes: [0] request from the injector, [1] state of the process.
REQ_NONE, REQ_KILL = 0, 1
ST_IDLE, ST_PARKED_IN_TX, ST_CHECKPOINTING, ST_CHECKPOINT_DONE = 0, 1, 2, 3

SCHEDULE = "soak-tick"
SCHEDULE_EVERY_S = 2
STREAM = "events"
OUTBOX = "notify"
LIMITED = "limited"
WORK = "work"
TICK = "tick"
WFCHILD = "wfchild"  # children that wait for two parents of WORK (SPEC §25)
CONSUMER = "soak-checker"


@dataclass(frozen=True)
class Config:
    engine: str
    location: str
    run_dir: str
    seed: int
    vt: int  # visibility timeout of every soak job, seconds
    max_attempts: int
    limit: int  # concurrency limit of the limited queue
    worker_concurrency: int

    @staticmethod
    def load(text: str) -> Config:
        return Config(**json.loads(text))

    def dump(self) -> str:
        return json.dumps(self.__dict__)

    def open(self) -> alkstore.Store:
        # A process started again after a kill may find Postgres down (restarting,
        # or killed too): keep trying for a while, as a supervisor would.
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.engine == "sqlite":
                    # A stopped process may hold the writer for seconds: wait rather than fail.
                    return alkstore.open(self.location, busy_timeout_ms=60000)
                return alkstore.open(self.location)
            except alkstore.DatabaseError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def ph(self, n: int) -> list[str]:
        """n placeholders of this engine's SQL."""
        return ["?"] * n if self.engine == "sqlite" else [f"${i}" for i in range(1, n + 1)]


DDL = [
    "CREATE TABLE IF NOT EXISTS ledger (key TEXT PRIMARY KEY, kind TEXT NOT NULL, ref BIGINT NOT NULL, "
    "producer TEXT NOT NULL, txn TEXT NOT NULL, t DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS execs (uid TEXT PRIMARY KEY, job_id BIGINT NOT NULL, queue TEXT NOT NULL, "
    "key TEXT, attempt INTEGER NOT NULL, worker TEXT NOT NULL, pid INTEGER NOT NULL, "
    "enqueued_at DOUBLE PRECISION, t_claim DOUBLE PRECISION, "
    "t_start DOUBLE PRECISION NOT NULL, t_end DOUBLE PRECISION, outcome TEXT, landed INTEGER, err TEXT)",
    "CREATE TABLE IF NOT EXISTS seen (uid TEXT PRIMARY KEY, session TEXT NOT NULL, n INTEGER NOT NULL, "
    "off BIGINT NOT NULL, key TEXT NOT NULL, t DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS delivered (uid TEXT PRIMARY KEY, key TEXT NOT NULL, pid INTEGER NOT NULL, "
    "t DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS pad (id INTEGER PRIMARY KEY, b BLOB)",
    "CREATE TABLE IF NOT EXISTS wf (child BIGINT NOT NULL, parent BIGINT NOT NULL)",
]


def has_workflows(store: alkstore.Store) -> bool:
    """Whether this alkstore has workflows (SPEC §25): `enqueue(after=...)`, `store.result`."""
    return hasattr(store, "result")


def create_tables(cfg: Config, store: alkstore.Store) -> None:
    with store.transaction() as tx:
        for ddl in DDL:
            if cfg.engine == "postgres":
                ddl = ddl.replace("BLOB", "BYTEA")
            tx.execute(ddl)


class Flag:
    """Two bytes in a file shared with the fault injector."""

    def __init__(self, path: str) -> None:
        self.path = path
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(bytes(2))
        self.fd = os.open(path, os.O_RDWR)

    def request(self) -> int:
        return os.pread(self.fd, 1, 0)[0]

    def set_request(self, v: int) -> None:
        os.pwrite(self.fd, bytes([v]), 0)

    def state(self) -> int:
        return os.pread(self.fd, 1, 1)[0]

    def set_state(self, v: int) -> None:
        os.pwrite(self.fd, bytes([v]), 1)


class Journal:
    """Append-only lines, each written with one os.write: they survive a kill -9."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, *words: object) -> None:
        os.write(self.fd, (" ".join(str(w) for w in words) + "\n").encode())


def _stopper() -> threading.Event:
    """Set by SIGTERM: finish the current step and exit."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


# -- producer ------------------------------------------------------------------


class _Rollback(Exception):
    pass


def producer(cfg: Config, index: int) -> None:
    name = f"p{index}-{os.getpid()}"
    rng = random.Random(f"{cfg.seed}-producer-{index}-{os.getpid()}")
    store = cfg.open()
    opts: dict[str, Any] = {
        "visibility_timeout_s": cfg.vt,
        "max_attempts": cfg.max_attempts,
        "backoff_base_s": 1,
    }
    work, limited = store.queue(WORK, **opts), store.queue(LIMITED, **opts)
    outbox = store.outbox(OUTBOX, **opts)
    stream = store.stream(STREAM)
    wfchild = store.queue(WFCHILD, **opts)
    workflows = has_workflows(store)
    journal = Journal(os.path.join(cfg.run_dir, f"producer-{name}.log"))
    flag = Flag(os.path.join(cfg.run_dir, f"flag-producer-{index}"))
    flag.set_state(ST_IDLE)
    stop = _stopper()
    app: Any = None  # the application's own connection, for conn=
    txno, seq, failures = 0, 0, 0

    def app_conn() -> Any:
        nonlocal app
        if app is None:
            if cfg.engine == "sqlite":
                app = sqlite3.connect(cfg.location, timeout=60, isolation_level=None)
            else:
                import psycopg

                app = psycopg.connect(cfg.location, application_name="soak-producer", autocommit=False)
        return app

    while not stop.is_set():
        txno += 1
        txn = f"{name}:{txno}"
        rollback = rng.random() < 0.12
        via_conn = rng.random() < 0.4
        items: list[tuple[str, str]] = []  # (kind, key)
        for _ in range(rng.randint(1, 3)):
            items.append((WORK, uuid.uuid4().hex))
        if rng.random() < 0.2:
            items.append((LIMITED, uuid.uuid4().hex))
        if rng.random() < 0.3:
            items.append((OUTBOX, uuid.uuid4().hex))
        if rng.random() < 0.5 and not via_conn:
            items.append((STREAM, uuid.uuid4().hex))
        # `after=` is not for conn= (SPEC §25): fan-ins go through store.transaction().
        fan_in = workflows and not via_conn and rng.random() < 0.25
        if fan_in:
            items.insert(0, (WORK, uuid.uuid4().hex))  # two parents at least
            items.append((WFCHILD, uuid.uuid4().hex))
        journal.write("B", txn, "conn" if via_conn else "tx")

        def payload(kind: str, key: str) -> dict[str, Any]:
            # The limited queue runs 2 at a time: short jobs, so it keeps up.
            ms = _duration_ms(rng) if kind != LIMITED else rng.randint(10, 150)
            p: dict[str, Any] = {"key": key, "ms": ms}
            if kind == WORK:
                r = rng.random()
                if r < 0.03:
                    p["poison"] = True
                elif r < 0.08:
                    p["fail_first"] = True
            return p

        try:
            if via_conn:
                c = app_conn()
                ph = cfg.ph(6)
                if cfg.engine == "sqlite":
                    c.execute("BEGIN IMMEDIATE")
                    ph = ["?"] * 6
                else:
                    ph = ["%s"] * 6
                try:
                    for kind, key in items:
                        if kind == OUTBOX:
                            ref = outbox.enqueue(payload(kind, key), conn=c)
                        else:
                            q = work if kind == WORK else limited
                            ref = q.enqueue(payload(kind, key), conn=c)
                        journal.write("J", txn, kind, key, ref)
                        c.execute(
                            f"INSERT INTO ledger (key, kind, ref, producer, txn, t) VALUES ({', '.join(ph)})",
                            [key, kind, ref, name, txn, time.time()],
                        )
                    _in_tx_pause(rng, flag, journal, txn)
                    if rollback:
                        raise _Rollback
                    c.execute("COMMIT") if cfg.engine == "sqlite" else c.commit()
                except BaseException:
                    try:
                        c.execute("ROLLBACK") if cfg.engine == "sqlite" else c.rollback()
                    except Exception:
                        _drop(app)
                        app = None
                    raise
            else:
                with store.transaction() as tx:
                    ph = cfg.ph(6)
                    parents: list[int] = []
                    for kind, key in items:
                        if kind == WFCHILD:
                            after: dict[str, Any] = {"after": parents[:2]}  # SPEC §25; not in older stubs
                            ref = wfchild.enqueue(payload(kind, key), tx=tx, **after)
                            for parent in parents[:2]:
                                tx.execute(
                                    f"INSERT INTO wf (child, parent) VALUES ({ph[0]}, {ph[1]})", [ref, parent]
                                )
                        elif kind == STREAM:
                            seq += 1
                            ref = stream.publish({"key": key, "producer": name, "seq": seq}, tx=tx)
                        elif kind == OUTBOX:
                            ref = outbox.enqueue(payload(kind, key), tx=tx)
                        else:
                            q = work if kind == WORK else limited
                            ref = q.enqueue(payload(kind, key), tx=tx)
                            if kind == WORK:
                                parents.append(ref)
                        journal.write("J", txn, kind, key, ref)
                        tx.execute(
                            f"INSERT INTO ledger (key, kind, ref, producer, txn, t) VALUES ({', '.join(ph)})",
                            [key, kind, ref, name, txn, time.time()],
                        )
                    _in_tx_pause(rng, flag, journal, txn)
                    if rollback:
                        raise _Rollback
            journal.write("C", txn)
            failures = 0
        except _Rollback:
            journal.write("R", txn)
        except Exception as exc:  # a database fault: the outcome is in doubt
            journal.write("X", txn, repr(exc).replace("\n", " ")[:200])
            if via_conn:
                _drop(app)
                app = None
            failures += 1
            stop.wait(min(2.0, 0.05 * 2**failures))
        # A steady load the workers keep up with: the soak is about faults, not throughput.
        stop.wait(rng.uniform(0.05, 0.2))
    store.close()


def _drop(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()


def _duration_ms(rng: random.Random) -> int:
    """How long the job's handler works: mostly short, some long enough to still
    run when a zombie of the same job wakes up."""
    r = rng.random()
    if r < 0.8:
        return rng.randint(5, 50)
    if r < 0.97:
        return rng.randint(100, 400)
    return rng.randint(1000, 2500)


def _in_tx_pause(rng: random.Random, flag: Flag, journal: Journal, txn: str) -> None:
    """The transaction's own work; parks here (mid-transaction) when a kill is requested."""
    time.sleep(rng.uniform(0.001, 0.01))
    if flag.request() == REQ_KILL:
        journal.write("P", txn)
        flag.set_state(ST_PARKED_IN_TX)
        while True:
            time.sleep(1)


# -- worker --------------------------------------------------------------------


def worker(cfg: Config, index: int) -> None:
    store = cfg.open()
    pid = os.getpid()
    wid = f"w{index}-{pid}"
    w = alkstore.Worker(store, concurrency=cfg.worker_concurrency, worker_id=wid, grace_s=30)
    ins = ", ".join(cfg.ph(11))
    upd = cfg.ph(5)

    def handle(payload: Any, job: alkstore.JobHandle) -> None:
        t_start = time.time()
        uid = f"{pid}-{job.id}-{job.attempts}-{uuid.uuid4().hex[:8]}"
        p = payload if isinstance(payload, dict) else {}
        key = p.get("key")
        with store.transaction() as tx:
            tx.execute(
                "INSERT INTO execs (uid, job_id, queue, key, attempt, worker, pid, enqueued_at, t_claim, "
                f"t_start, landed) VALUES ({ins})",
                [
                    uid,
                    job.id,
                    job.queue,
                    key,
                    job.attempts,
                    wid,
                    pid,
                    job.enqueued_at.timestamp(),
                    job.claimed_at.timestamp(),
                    t_start,
                    None,
                ],
            )
        time.sleep(int(p.get("ms", 20)) / 1000)
        try:
            with store.transaction() as tx:
                t_end = time.time()
                if p.get("poison"):
                    outcome, landed = "fail", job.fail("poison", tx=tx)
                elif p.get("fail_first") and job.attempts == 1:
                    outcome, landed = "retry", job.retry("deliberate", delay=0, tx=tx)
                else:
                    outcome, landed = "ack", job.ack(tx=tx)
                tx.execute(
                    f"UPDATE execs SET t_end = {upd[0]}, outcome = {upd[1]}, landed = {upd[2]}, "
                    f"err = {upd[3]} WHERE uid = {upd[4]}",
                    [t_end, outcome, 1 if landed else 0, None, uid],
                )
        except alkstore.AlkstoreError as exc:
            # The settle failed (a database fault): say so if we can, then let the worker retry.
            try:
                with store.transaction() as tx:
                    tx.execute(
                        f"UPDATE execs SET t_end = {upd[0]}, outcome = {upd[1]}, landed = {upd[2]}, "
                        f"err = {upd[3]} WHERE uid = {upd[4]}",
                        [time.time(), "error", 0, repr(exc)[:300], uid],
                    )
            except alkstore.AlkstoreError:
                pass
            raise

    for q in (WORK, LIMITED, TICK, WFCHILD):
        w.handler(q)(handle)
    w.run()  # SIGTERM stops it
    store.close()


# -- aux: schedules, stream subscriber, outbox relay ----------------------------


def aux(cfg: Config, index: int) -> None:
    store = cfg.open()
    pid = os.getpid()
    stop = alkstore.StopToken()
    signal.signal(signal.SIGTERM, lambda *_: stop.stop())
    errors = Journal(os.path.join(cfg.run_dir, f"aux-{pid}.log"))

    def forever(name: str, fn: Any) -> threading.Thread:
        def run() -> None:
            while not stop.stopped:
                try:
                    fn()
                except Exception as exc:  # a database fault: start over
                    errors.write(name, time.time(), repr(exc).replace("\n", " ")[:200])
                    stop.wait(0.5)

        t = threading.Thread(target=run, name=f"soak-{name}")
        t.start()
        return t

    session = f"{pid}-{uuid.uuid4().hex[:6]}"
    n = 0
    ins = ", ".join(cfg.ph(6))

    def subscribe() -> None:
        nonlocal n
        for ev in store.stream(STREAM).subscribe(CONSUMER, stop=stop):
            n += 1
            key = ev.payload["key"] if isinstance(ev.payload, dict) else ""
            with store.transaction() as tx:
                tx.execute(
                    f"INSERT INTO seen (uid, session, n, off, key, t) VALUES ({ins})",
                    [f"{session}-{n}", session, n, ev.offset, key, time.time()],
                )

    dins = ", ".join(cfg.ph(4))

    def send(payload: Any) -> None:
        with store.transaction() as tx:
            tx.execute(
                f"INSERT INTO delivered (uid, key, pid, t) VALUES ({dins})",
                [uuid.uuid4().hex, payload["key"], pid, time.time()],
            )

    threads = [
        forever("schedules", lambda: store.run_schedules(stop)),
        forever("subscribe", subscribe),
        forever("outbox", lambda: store.outbox(OUTBOX).deliver(send, worker_id=f"relay-{pid}", stop=stop)),
    ]
    for t in threads:
        t.join()
    store.close()


# -- bulk (SQLite): big writes and checkpoints ----------------------------------


def bulk(cfg: Config, index: int) -> None:
    store = cfg.open()
    work = store.queue(WORK, visibility_timeout_s=cfg.vt, max_attempts=cfg.max_attempts, backoff_base_s=1)
    name = f"b{index}-{os.getpid()}"
    journal = Journal(os.path.join(cfg.run_dir, f"producer-{name}.log"))
    flag = Flag(os.path.join(cfg.run_dir, f"flag-bulk-{index}"))
    flag.set_state(ST_IDLE)
    stop = _stopper()
    app = sqlite3.connect(cfg.location, timeout=60, isolation_level=None)
    app.execute("PRAGMA wal_autocheckpoint = 0")  # this connection leaves the WAL to the explicit checkpoint
    rng = random.Random(f"{cfg.seed}-bulk-{index}-{os.getpid()}")
    txno = 0
    while not stop.is_set():
        txno += 1
        txn = f"{name}:{txno}"
        key = uuid.uuid4().hex
        journal.write("B", txn, "conn")
        try:
            app.execute("BEGIN IMMEDIATE")
            try:
                app.execute("DELETE FROM pad")
                app.execute("INSERT INTO pad (b) VALUES (randomblob(?))", [rng.randint(4, 12) << 20])
                ref = work.enqueue({"key": key, "ms": 10}, conn=app)
                journal.write("J", txn, WORK, key, ref)
                app.execute(
                    "INSERT INTO ledger (key, kind, ref, producer, txn, t) VALUES (?, ?, ?, ?, ?, ?)",
                    [key, WORK, ref, name, txn, time.time()],
                )
                app.execute("COMMIT")
            except BaseException:
                app.execute("ROLLBACK")
                raise
            journal.write("C", txn)
            # The WAL now holds megabytes of frames: copy them back. A kill requested
            # by the injector lands while this runs.
            flag.set_state(ST_CHECKPOINTING)
            app.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            flag.set_state(ST_CHECKPOINT_DONE)
        except Exception as exc:
            journal.write("X", txn, repr(exc).replace("\n", " ")[:200])
            stop.wait(0.2)
        stop.wait(rng.uniform(0.05, 0.3) if flag.request() != REQ_KILL else 0.0)
    app.close()
    store.close()


ROLES = {"producer": producer, "worker": worker, "aux": aux, "bulk": bulk}


def main(argv: Sequence[str]) -> None:
    role, cfg_text, index = argv[1], argv[2], int(argv[3])
    ROLES[role](Config.load(cfg_text), index)


if __name__ == "__main__":
    main(sys.argv)
