"""The soak with a ledger (SPEC §27): real processes under random faults, then a
check of everything they wrote against what alkstore kept.

    python benches/soak.py --engine sqlite|postgres --minutes M --workers W --seed S
    python benches/soak.py --profile ci --engine sqlite          # the 60-second profile of the suite
    python benches/soak.py --render docs/reliability.md a.json b.json

Producers, workers, the scheduler/subscriber/relay process (``aux``) and, on
SQLite, a bulk writer run as separate processes (``benches/soak_roles.py``); this
process supervises them (a process that dies is started again), injects the
faults (seeded), then lets the system drain and runs the ledger check
(``benches/soak_check.py``). It prints a summary and exits 1 on any violation.

On Postgres everything runs against a private instance this script creates with
``initdb`` in a temporary directory on a free port, never against a shared server:
it is restarted and killed on purpose.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import contextlib

import alkstore
import soak_check
from soak_faults import FaultLog, PrivatePostgres
from soak_roles import (
    LIMITED,
    OUTBOX,
    REQ_KILL,
    REQ_NONE,
    SCHEDULE,
    SCHEDULE_EVERY_S,
    ST_CHECKPOINTING,
    ST_PARKED_IN_TX,
    STREAM,
    TICK,
    WFCHILD,
    WORK,
    Config,
    Flag,
    create_tables,
)

ROLES_PY = str(Path(__file__).parent / "soak_roles.py")
KINDS = {
    "sqlite": ["kill_worker", "kill_producer", "stop_worker", "kill_checkpoint"],
    "postgres": ["kill_worker", "kill_producer", "stop_worker", "pg_terminate", "pg_restart", "pg_kill"],
}


@dataclass
class Proc:
    role: str
    index: int
    popen: subprocess.Popen[bytes]
    expected_death: bool = False


class Supervisor:
    """Starts the soak's processes and starts again any that dies while the soak runs."""

    def __init__(self, cfg: Config, log: FaultLog) -> None:
        self.cfg = cfg
        self.log = log
        self.procs: dict[tuple[str, int], Proc] = {}
        self.lock = threading.RLock()
        self.closing: set[str] = set()  # roles being stopped on purpose
        self.crashes: list[str] = []
        self.spawned = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="soak-supervisor", daemon=True)

    def spawn(self, role: str, index: int) -> Proc:
        Flag(os.path.join(self.cfg.run_dir, f"flag-{role}-{index}")).set_request(REQ_NONE)
        self.spawned += 1
        with open(os.path.join(self.cfg.run_dir, f"{role}-{index}-{self.spawned}.out"), "wb") as out:
            popen = subprocess.Popen(
                [sys.executable, ROLES_PY, role, self.cfg.dump(), str(index)], stdout=out, stderr=out
            )
        p = Proc(role, index, popen)
        with self.lock:
            self.procs[(role, index)] = p
        return p

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            with self.lock:
                for key, p in list(self.procs.items()):
                    rc = p.popen.poll()
                    if rc is None or p.role in self.closing:
                        continue
                    if not p.expected_death:
                        out = os.path.join(self.cfg.run_dir, f"{p.role}-{p.index}-*.out")
                        self.crashes.append(f"{p.role} {p.index} pid {p.popen.pid} exited {rc} (see {out})")
                        self.log.add("crash", time.time(), time.time(), role=p.role, pid=p.popen.pid, rc=rc)
                    self.spawn(*key)

    def pick(self, role: str, rng: random.Random) -> Proc | None:
        with self.lock:
            live = [p for p in self.procs.values() if p.role == role and p.popen.poll() is None]
            return rng.choice(sorted(live, key=lambda p: p.index)) if live else None

    def kill(self, p: Proc) -> None:
        p.expected_death = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.popen.pid, signal.SIGKILL)
        p.popen.wait()

    def stop_role(self, role: str, timeout: float = 60) -> None:
        """SIGTERM every process of `role` and wait; kill what does not exit."""
        with self.lock:
            self.closing.add(role)
            procs = [p for p in self.procs.values() if p.role == role]
        for p in procs:
            if p.popen.poll() is None:
                p.popen.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.crashes.append(f"{role} {p.index} pid {p.popen.pid} did not stop on SIGTERM")
                self.kill(p)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        with self.lock:
            for p in self.procs.values():
                if p.popen.poll() is None:
                    self.kill(p)


class Injector:
    """Faults at seeded random times, each logged with its time and kind."""

    def __init__(
        self, cfg: Config, sup: Supervisor, log: FaultLog, pg: PrivatePostgres | None, mean_gap_s: float
    ) -> None:
        self.cfg, self.sup, self.log, self.pg = cfg, sup, log, pg
        self.rng = random.Random(f"{cfg.seed}-faults")
        self.mean_gap_s = mean_gap_s
        self.kinds = KINDS[cfg.engine]
        self.stopping = threading.Event()
        self.stops: list[threading.Thread] = []
        self.stopped_pids: set[int] = set()

    def run(self, until: float) -> None:
        order = list(self.kinds)
        self.rng.shuffle(order)  # every kind once early on, then at random
        while not self.stopping.wait(self.rng.expovariate(1 / self.mean_gap_s)):
            if time.time() >= until:
                break
            if order:
                kind = order.pop(0)
            else:
                # The kinds that landed least so far (a checkpoint kill that kept missing,
                # say) go first, so a long run injects every kind about as often.
                landed = {k: 0 for k in self.kinds}
                for f in self.log.faults:
                    if f["kind"] in landed:
                        landed[f["kind"]] += 1
                fewest = min(landed.values())
                kind = self.rng.choice([k for k in self.kinds if landed[k] == fewest])
            try:
                getattr(self, kind)()
            except Exception as exc:
                self.log.add("injector-error", time.time(), time.time(), fault=kind, error=repr(exc))
        for t in self.stops:
            t.join()

    def kill_worker(self) -> None:
        role = "aux" if self.rng.random() < 0.15 else "worker"
        p = self.sup.pick(role, self.rng)
        if p is None:
            return
        t0 = time.time()
        self.sup.kill(p)
        self.log.add("kill_worker", t0, time.time(), role=role, pid=p.popen.pid)

    def kill_producer(self) -> None:
        p = self.sup.pick("producer", self.rng)
        if p is None:
            return
        flag = Flag(os.path.join(self.cfg.run_dir, f"flag-producer-{p.index}"))
        flag.set_request(REQ_KILL)
        deadline = time.time() + 10
        while flag.state() != ST_PARKED_IN_TX and time.time() < deadline and p.popen.poll() is None:
            time.sleep(0.005)
        in_tx = flag.state() == ST_PARKED_IN_TX
        t0 = time.time()
        self.sup.kill(p)
        self.log.add("kill_producer", t0, time.time(), pid=p.popen.pid, mid_transaction=in_tx)

    def stop_worker(self) -> None:
        """SIGSTOP past the lease, then SIGCONT: the zombie's late settle must be refused.

        Now and then every worker process at once (a frozen machine): then nobody
        reclaims the lapsed jobs before the zombies wake, and their late acks meet
        rows still theirs but for the lease."""
        every = self.rng.random() < 0.3
        if every:
            with self.sup.lock:
                procs = [p for p in self.sup.procs.values() if p.role == "worker" and p.popen.poll() is None]
        else:
            one = self.sup.pick("worker", self.rng)
            procs = [one] if one is not None else []
        pids = [p.popen.pid for p in procs if p.popen.pid not in self.stopped_pids]
        if not pids:
            return
        length = self.cfg.vt + self.rng.uniform(2.5, 4.5)  # past the lease, whatever the last heartbeat
        self.stopped_pids.update(pids)
        t0 = time.time()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)

        def resume() -> None:
            time.sleep(length)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
                self.stopped_pids.discard(pid)
            self.log.add("stop_worker", t0, time.time(), pids=pids, every_worker=every)

        t = threading.Thread(target=resume, daemon=True)
        t.start()
        self.stops.append(t)

    def kill_checkpoint(self) -> None:
        """SIGKILL the bulk writer while its TRUNCATE checkpoint runs (asked for, then awaited)."""
        for _ in range(5):
            p = self.sup.pick("bulk", self.rng)
            if p is None:
                return
            flag = Flag(os.path.join(self.cfg.run_dir, f"flag-bulk-{p.index}"))
            flag.set_request(REQ_KILL)
            deadline = time.time() + 20
            while flag.state() != ST_CHECKPOINTING and time.time() < deadline and p.popen.poll() is None:
                time.sleep(0.0005)
            t0 = time.time()
            self.sup.kill(p)
            during = flag.state() == ST_CHECKPOINTING
            if during:
                self.log.add("kill_checkpoint", t0, time.time(), pid=p.popen.pid, during_checkpoint=True)
                return
            self.log.add("kill_checkpoint_missed", t0, time.time(), pid=p.popen.pid)
            time.sleep(0.5)  # the supervisor starts it again

    def pg_terminate(self) -> None:
        assert self.pg is not None
        t0 = time.time()
        n = self.pg.terminate_alkstore_backends(0.5, self.rng)
        self.log.add("pg_terminate", t0, time.time(), backends=n)

    def pg_restart(self) -> None:
        assert self.pg is not None
        mode = self.rng.choice(["fast", "immediate"])
        t0 = time.time()
        self.pg.restart(mode)
        self.log.add("pg_restart", t0, time.time(), mode=mode)

    def pg_kill(self) -> None:
        assert self.pg is not None
        t0 = time.time()
        self.pg.kill9()
        self.log.add("pg_kill", t0, time.time())


PROFILES = {
    # name: minutes, workers, producers, mean seconds between faults, drain timeout
    "ci": {"minutes": 1.0, "workers": 3, "producers": 2, "fault_gap": 3.0},
    "full": {"minutes": 10.0, "workers": 4, "producers": 2, "fault_gap": 4.0},
}


def _wait(what: str, cond: Any, timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if cond():
                return True
        except alkstore.AlkstoreError:
            pass
        time.sleep(0.5)
    print(f"soak: gave up waiting for {what} after {timeout:.0f}s", file=sys.stderr)
    return False


def run(args: argparse.Namespace) -> dict[str, Any]:
    run_dir = args.run_dir or tempfile.mkdtemp(prefix=f"alkstore-soak-{args.engine}-")
    os.makedirs(run_dir, exist_ok=True)
    pg = PrivatePostgres(run_dir) if args.engine == "postgres" else None
    location = pg.url if pg else os.path.join(run_dir, "soak.db")
    cfg = Config(
        engine=args.engine,
        location=location,
        run_dir=run_dir,
        seed=args.seed,
        vt=args.vt,
        max_attempts=25,
        limit=args.limit,
        worker_concurrency=args.concurrency,
    )
    log = FaultLog(os.path.join(run_dir, "faults.jsonl"))
    sup = Supervisor(cfg, log)
    started = time.time()
    try:
        store = cfg.open()
        create_tables(cfg, store)
        store.queue(LIMITED).set_limits(concurrency=cfg.limit)
        store.schedule(SCHEDULE, f"@every {SCHEDULE_EVERY_S}s", TICK, payload={"ms": 5})
        first_fire = next(s for s in store.schedules() if s.name == SCHEDULE).next_fire_at.timestamp()

        for i in range(args.workers):
            sup.spawn("worker", i)
        for i in range(args.producers):
            sup.spawn("producer", i)
        sup.spawn("aux", 0)
        if args.engine == "sqlite":
            sup.spawn("bulk", 0)
        sup.start()
        load_end = started + args.minutes * 60
        inj = Injector(cfg, sup, log, pg, args.fault_gap)
        inj.run(until=load_end)  # returns after the last stopped worker is resumed
        time.sleep(max(0.0, load_end - time.time()))

        # Drain: producers stop, every queue empties, the subscriber catches up.
        sup.stop_role("producer")
        sup.stop_role("bulk")
        queues: list[Any] = [
            store.queue(WORK),
            store.queue(LIMITED),
            store.outbox(OUTBOX),
            store.queue(WFCHILD),
        ]

        def drained() -> bool:
            for q in queues:
                s = q.stats()
                if s.pending or s.scheduled or s.processing or getattr(s, "waiting", 0):
                    return False
            events = store.stream(STREAM).read(after=0, limit=1)
            last = store.stream(STREAM).read(after=store.stream(STREAM).get_offset("soak-checker"), limit=1)
            return not events or not last

        drained_ok = _wait("the queues to drain", drained, args.drain_timeout)
        sup.stop_role("aux")  # the schedule runner stops: no more fires
        final_fire = next(s for s in store.schedules() if s.name == SCHEDULE).next_fire_at.timestamp()
        tick = store.queue(TICK)
        _wait(
            "the tick queue to drain",
            lambda: (lambda s: not (s.pending or s.scheduled or s.processing))(tick.stats()),
            args.drain_timeout,
        )
        sup.stop_role("worker")
        sup.close()
        faults = FaultLog.load(log.path)
        res = soak_check.check(
            cfg,
            store,
            faults,
            {"schedule_first": first_fire, "schedule_final": final_fire, "schedule_every": SCHEDULE_EVERY_S},
        )
        if not drained_ok:
            res.bad("not drained", f"queues still busy after {args.drain_timeout:.0f}s")
        for c in sup.crashes:
            res.bad("process crashed", c)
        if args.engine == "sqlite":
            with store.transaction() as tx:
                ok = tx.query("PRAGMA integrity_check")
            if [next(iter(r.values())) for r in ok] != ["ok"]:
                res.bad("sqlite integrity", str(ok))
        store.close()
    finally:
        sup.close()
        if pg is not None:
            pg.close()
    by_kind: dict[str, int] = {}
    for f in faults:
        if f["kind"] in KINDS[args.engine]:
            by_kind[f["kind"]] = by_kind.get(f["kind"], 0) + 1
    other = {f["kind"] for f in faults} - set(KINDS[args.engine])
    report = {
        "engine": args.engine,
        "command": " ".join(["python", "benches/soak.py", *sys.argv[1:]]),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "minutes": args.minutes,
        "workers": args.workers,
        "producers": args.producers,
        "seed": args.seed,
        "elapsed_s": round(time.time() - started),
        "faults_by_kind": {k: by_kind.get(k, 0) for k in KINDS[args.engine]},
        "other_events": sorted(other),
        "counts": res.counts,
        "reexecutions": res.reexecutions,
        "violations": res.violations,
        "run_dir": run_dir,
    }
    if not args.keep and not res.violations:
        shutil.rmtree(run_dir, ignore_errors=True)
    return report


def summary(r: dict[str, Any]) -> str:
    c = r["counts"]
    lines = [
        f"soak {r['engine']}: {r['minutes']} min, {r['workers']} workers, {r['producers']} producers, "
        f"seed {r['seed']} ({r['elapsed_s']} s with the drain)",
        "faults: " + ", ".join(f"{k}={v}" for k, v in r["faults_by_kind"].items()),
        f"ledger rows {c.get('ledger_rows')}, jobs {c.get('jobs')}, executions {c.get('executions')}, "
        f"re-executions {c.get('reexecutions')} {c.get('reexecutions_by_reason')}",
        f"producer transactions {c.get('producer_transactions')}",
        f"dead letters {c.get('dead_by_reason')}",
        f"limited queue: at most {c.get('limited_max_concurrent')} at once; "
        f"schedule: {c.get('schedule_fires')} fires for {c.get('schedule_boundaries')} boundaries; "
        f"stream: {c.get('stream_events')} events, "
        f"{c.get('stream_replays')} replayed; outbox: {c.get('outbox_deliveries')} deliveries, "
        f"{c.get('outbox_duplicates')} duplicates; workflows: "
        + (
            f"{c['workflow_children']} fan-in children, {c['workflow_children_cancelled']} cancelled"
            if c.get("workflow_children")
            else "not in this build"
        ),
        f"violations: {len(r['violations'])}",
    ]
    lines += [f"  VIOLATION {v}" for v in r["violations"][:50]]
    if r["violations"]:
        lines.append(f"run directory kept: {r['run_dir']}")
    return "\n".join(lines)


def render(out: str, paths: list[str]) -> None:
    reports = [json.loads(Path(p).read_text()) for p in paths]
    kinds = sorted({k for r in reports for k in r["faults_by_kind"]})
    md = [
        "# Reliability: the soak with a ledger",
        "",
        "Written by `make soak` (SPEC §27): `benches/soak.py` runs producers, workers, a schedule",
        "runner, a stream subscriber and an outbox relay as separate processes, injects faults at",
        "seeded random times, lets the system drain, then checks everything the processes wrote",
        "against what alkstore kept (the checks are listed in `benches/soak_check.py`).",
        "",
        "| | "
        + " | ".join(
            r["engine"] + (" + workflows" if r["counts"].get("workflow_children") else "") for r in reports
        )
        + " |",
        "|---|" + "---|" * len(reports),
        "| date | " + " | ".join(r["date"] for r in reports) + " |",
        "| minutes under faults | " + " | ".join(str(r["minutes"]) for r in reports) + " |",
        "| worker / producer processes | "
        + " | ".join(f"{r['workers']} / {r['producers']}" for r in reports)
        + " |",
    ]
    for k in kinds:
        md.append(
            f"| faults: `{k}` | " + " | ".join(str(r["faults_by_kind"].get(k, "—")) for r in reports) + " |"
        )
    for label, key in [
        ("ledger rows (committed business writes)", "ledger_rows"),
        ("jobs", "jobs"),
        ("handler executions", "executions"),
        ("re-executions (each explained by a fault)", "reexecutions"),
        ("stream events / replayed to the subscriber", None),
        ("outbox deliveries / duplicates", None),
        ("schedule fires / boundaries", None),
        ("limited queue (limit 2): most at once", "limited_max_concurrent"),
        ("workflow fan-in children / cancelled by a dead parent", None),
    ]:
        if key is not None:
            cells = [str(r["counts"].get(key)) for r in reports]
        elif label.startswith("stream"):
            cells = [
                f"{r['counts'].get('stream_events')} / {r['counts'].get('stream_replays')}" for r in reports
            ]
        elif label.startswith("workflow"):
            cells = [
                f"{r['counts'].get('workflow_children')} / {r['counts'].get('workflow_children_cancelled')}"
                if r["counts"].get("workflow_children")
                else "not in this build"
                for r in reports
            ]
        elif label.startswith("outbox"):
            cells = [
                f"{r['counts'].get('outbox_deliveries')} / {r['counts'].get('outbox_duplicates')}"
                for r in reports
            ]
        else:
            cells = [
                f"{r['counts'].get('schedule_fires')} / {r['counts'].get('schedule_boundaries')}"
                for r in reports
            ]
        md.append(f"| {label} | " + " | ".join(cells) + " |")
    md.append("| **violations** | " + " | ".join(f"**{len(r['violations'])}**" for r in reports) + " |")
    md += ["", "Commands:", ""]
    md += [f"- `{r['command']}`" for r in reports]
    md += ["", "Re-executions by cause:", ""]
    for r in reports:
        md.append(f"- {r['engine']}: {r['counts'].get('reexecutions_by_reason')}")
    for r in reports:
        if r["violations"]:
            md += ["", f"Violations on {r['engine']}:", ""] + [f"- {v}" for v in r["violations"][:100]]
    extra = os.environ.get("SOAK_NOTE")
    if extra:
        md += ["", extra]
    md += ["", *EXPLAINED.strip("\n").splitlines()]
    Path(out).write_text("\n".join(md) + "\n")


EXPLAINED = """
## What runs

- **Producers** (2 processes) commit transactions that write ledger rows (the business
  write) and, in the same transaction, enqueue 1-3 jobs, sometimes a job of the limited
  queue, an outbox message and a stream event; 12% are rolled back on purpose. Four in
  ten go through the application's own driver connection (`sqlite3` or psycopg) with
  `conn=`, the rest through `store.transaction()`; where the build has workflows
  (SPEC §25), a quarter of the latter also enqueue a fan-in child `after=` two of
  their jobs.
- **Workers** (`alkstore.Worker`, 3 handlers each) record each execution in a row
  committed when the handler starts, and settle the job (`ack`, or the deliberate
  `retry`/`fail` of some jobs) in the same transaction as the row's end, outcome and
  whether the settle landed.
- **aux** runs the `@every 2s` schedule runner, a stream subscriber (one row per event
  it sees) and the outbox relay (one row per delivery). On SQLite a **bulk** writer
  commits 4-12 MiB through its own `sqlite3` connection (with a job enqueued by
  `conn=`) and then runs a TRUNCATE checkpoint of the grown WAL.
- A supervisor starts again every process that dies.

## The faults

| kind | what |
|---|---|
| `kill_worker` | SIGKILL of a worker process (now and then of the aux process) |
| `kill_producer` | SIGKILL of a producer parked inside its open transaction: always mid-transaction |
| `stop_worker` | SIGSTOP of one worker (or, 3 times in 10, of every worker: a frozen machine) for the lease plus 2.5-4.5 s, then SIGCONT: its late settles must be refused |
| `kill_checkpoint` | SQLite: SIGKILL of the bulk writer while its checkpoint runs |
| `pg_terminate` | `pg_terminate_backend` on about half of alkstore's connections |
| `pg_restart` | restart (fast or immediate) of the soak's private Postgres |
| `pg_kill` | SIGKILL of the private Postgres postmaster, then a start (crash recovery) |

The private Postgres is made by `initdb` in a temporary directory on a free port
(run as the `postgres` user when the soak runs as root), with `fsync=off`: the
faults kill processes, never the machine, so the page cache keeps every write.

## The checks (benches/soak_check.py)

- every committed ledger row has its job, acked exactly once or dead with a reason
  (the only dead letters expected are the jobs that fail on purpose);
- no job, event, delivery or row is left by a transaction that was rolled back or
  killed mid-transaction; a transaction whose commit failed with the server is all or
  nothing; no job ran that has no committed ledger row;
- a handler stopped past its lease never got its settle accepted (the fencing);
- the valid executions of one job never overlap (an execution is valid until it
  settles if its settle landed, else until the first fault that hit it);
- every execution whose settle did not land, and every attempt that left no row, is
  explained by a fault (killed, stopped, or cut off by a database fault), and listed;
- the limited queue (`set_limits(concurrency=2)`) never ran more than 2 at once;
- the schedule fired exactly once per boundary between its first and its last, never
  early;
- a workflow child (a fan-in after two jobs, enqueued in the parents' transaction)
  never started before both parents' acks, and went dead only when a parent died;
- the stream kept commit order per producer, and the subscriber saw every event in
  order, replaying only after a restart; every committed outbox message was delivered;
- no process crashed on its own; on SQLite, `PRAGMA integrity_check` says ok.

## Does it catch bugs?

Checked on 2026-12-05 with the 60-second profile (`--profile ci`, seed 1) against
throwaway builds broken on purpose (never merged):

| breakage | SQLite | Postgres |
|---|---|---|
| the ack skips the claim-token and deadline checks (worker id still checked) | caught: late ack landed after SIGSTOP (3), ledger row without its job (7: a Worker's stale ack of a deliberately retried job deleted the same worker's next claim), execution lost without a fault (3) | caught: late ack landed (2), ledger row without its job (8), execution lost without a fault (3) |
| SQLite: the limited claim counts room as 3x the limit | caught: limit exceeded, 6 at once for a limit of 2 | — |
| Postgres: a lease is reclaimed 3 s before it lapses | — | caught: overlapping valid executions (4), execution lost without a fault (4) |
"""  # noqa: E501 (Markdown table rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=["sqlite", "postgres"])
    ap.add_argument(
        "--profile", choices=sorted(PROFILES), help="defaults for minutes/workers/producers/faults"
    )
    ap.add_argument("--minutes", type=float)
    ap.add_argument("--workers", type=int)
    ap.add_argument("--producers", type=int)
    ap.add_argument("--concurrency", type=int, default=3, help="handlers per worker process")
    ap.add_argument("--limit", type=int, default=2, help="concurrency limit of the limited queue")
    ap.add_argument("--vt", type=int, default=4, help="visibility timeout of the soak's jobs, seconds")
    ap.add_argument("--fault-gap", type=float, help="mean seconds between faults")
    ap.add_argument("--drain-timeout", type=float, default=240)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--run-dir", help="where logs and the SQLite file go (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the run directory even when the check passes")
    ap.add_argument("--json", help="write the report as JSON here")
    ap.add_argument("--render", nargs="+", metavar=("OUT", "JSON"), help="render OUT from JSON reports")
    args = ap.parse_args()
    if args.render:
        render(args.render[0], args.render[1:])
        return
    if args.engine is None:
        ap.error("--engine is required")
    prof = PROFILES[args.profile or "full"]
    for name in ("minutes", "workers", "producers", "fault_gap"):
        if getattr(args, name) is None:
            setattr(args, name, prof[name])
    report = run(args)
    print(summary(report), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    sys.exit(1 if report["violations"] else 0)


if __name__ == "__main__":
    main()
