"""The ledger check at the end of a soak (SPEC §27).

Reads what the soak's processes wrote (the ledger, the executions, the events
the subscriber saw, the outbox deliveries), what alkstore still holds (live and
dead jobs, the stream, the schedule), the producers' journals and the fault
log, and returns the violations with the counts for the summary.

Definitions used below:
- an execution is one handler run: a row committed when the handler starts,
  completed in the transaction that settles the job (``landed`` says whether
  the ack, retry or fail was accepted);
- an execution is *impaired* by a fault that hit it: its process killed or
  stopped while it ran, or (all processes) a database fault while it ran — a
  terminated backend, a restart or kill of Postgres, and on SQLite a stopped
  process that may hold the single writer;
- its *valid interval* runs from its start to its end if it landed, else to the
  first impairment: no two valid intervals of one job may overlap, and no more
  than the limit of the limited queue may overlap at any instant.
"""

from __future__ import annotations

import glob
import itertools
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import alkstore
from soak_roles import LIMITED, OUTBOX, STREAM, TICK, WFCHILD, WORK, Config

INF = float("inf")


@dataclass
class Result:
    violations: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    reexecutions: list[str] = field(default_factory=list)

    def bad(self, kind: str, msg: str) -> None:
        self.violations.append(f"{kind}: {msg}")


def _rows(store: alkstore.Store, sql: str) -> list[dict[str, Any]]:
    with store.transaction() as tx:
        rows = tx.query(sql)
    return rows


def _all_jobs(q: Any, dead: bool) -> list[Any]:
    out: list[Any] = []
    before: int | None = None
    while True:
        page = q.dead_jobs(1000, before) if dead else q.live_jobs(1000, before)
        out += page
        if len(page) < 1000:
            return out
        before = page[-1].id


def _journals(run_dir: str) -> dict[str, dict[str, Any]]:
    """Per producer transaction: its items, how it ended (C, R, X, parked P or nothing)."""
    txns: dict[str, dict[str, Any]] = {}
    for path in glob.glob(os.path.join(run_dir, "producer-*.log")):
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) < 2:
                    continue
                t = txns.setdefault(w[1], {"items": [], "end": None})
                if w[0] == "J":
                    t["items"].append((w[2], w[3], int(w[4])))
                elif w[0] in "CRXP":
                    t["end"] = w[0]
    return txns


class Faults:
    def __init__(self, faults: list[dict[str, Any]], cfg: Config) -> None:
        self.all = faults
        self.cfg = cfg
        slack = cfg.vt + 3
        self.db: list[tuple[float, float, str]] = []  # windows that may cut off any process
        for f in faults:
            if f["kind"] in ("pg_terminate", "pg_restart", "pg_kill"):
                self.db.append((f["t0"], f["t1"] + slack, f["kind"]))
            elif cfg.engine == "sqlite" and f["kind"] == "stop_worker":
                self.db.append((f["t0"], f["t1"] + slack, "writer stalled by a stopped process"))
            elif cfg.engine == "sqlite" and f["kind"] == "kill_checkpoint":
                self.db.append((f["t0"], f["t1"] + slack, "kill during checkpoint"))
        self.kills: dict[int, float] = {f["pid"]: f["t0"] for f in faults if f["kind"] in ("kill_worker",)}
        self.stops: dict[int, list[tuple[float, float]]] = defaultdict(list)
        for f in faults:
            if f["kind"] == "stop_worker":
                for pid in f["pids"]:
                    self.stops[pid].append((f["t0"], f["t1"]))

    def impairment(self, pid: int, ts: float, te: float) -> tuple[float, str] | None:
        """The first fault that hit an execution of `pid` holding its job over [ts, te]."""
        found: list[tuple[float, str]] = []
        k = self.kills.get(pid)
        if k is not None and k >= ts and k <= te:
            found.append((k, "killed"))
        for a, b in self.stops.get(pid, []):
            if a <= te and b >= ts:
                found.append((max(a, ts), "stopped"))
        for a, b, kind in self.db:
            if a <= te and b >= ts:
                found.append((max(a, ts), f"cut off ({kind})"))
        # At one instant, the process's own fault explains more than a global one.
        return min(found, key=lambda f: (f[0], f[1].startswith("cut off"))) if found else None

    def any_between(self, ts: float, te: float) -> str | None:
        for f in self.all:
            if f["kind"] in ("kill_worker", "stop_worker") or f["kind"].startswith("pg_"):
                end = f["t1"] + self.cfg.vt + 3
                if f["t0"] <= te and end >= ts:
                    return str(f["kind"])
        return None


def check(
    cfg: Config, store: alkstore.Store, faults_list: list[dict[str, Any]], extra: dict[str, Any]
) -> Result:
    res = Result()
    faults = Faults(faults_list, cfg)
    ledger = _rows(store, "SELECT key, kind, ref, producer, txn FROM ledger")
    execs = _rows(
        store,
        "SELECT uid, job_id, queue, key, attempt, pid, enqueued_at, t_claim, t_start, t_end, outcome, "
        "landed, err FROM execs",
    )
    seen = _rows(store, "SELECT session, n, off, key, t FROM seen")
    delivered = _rows(store, "SELECT key, pid, t FROM delivered")
    txns = _journals(cfg.run_dir)
    queues = {name: store.queue(name) for name in (WORK, LIMITED, TICK, WFCHILD)}
    queues[OUTBOX] = store._outbox_queue(OUTBOX)
    dead = {name: _all_jobs(q, True) for name, q in queues.items()}
    live = {name: _all_jobs(q, False) for name, q in queues.items()}
    events: list[Any] = []
    while True:
        page = store.stream(STREAM).read(after=events[-1].offset if events else 0, limit=1000)
        events += page
        if len(page) < 1000:
            break

    ledger_by_key = {r["key"]: r for r in ledger}
    end_of_run = max([INF])

    # -- drained --------------------------------------------------------------
    for name, jobs in live.items():
        if jobs:
            res.bad("not drained", f"{len(jobs)} live job(s) left in {name}: ids {[j.id for j in jobs[:10]]}")

    # -- producer transactions: committed ones have their rows, rolled back ones left nothing
    keys_anywhere: set[str] = {e["key"] for e in execs if e["key"]}
    keys_anywhere |= {d["key"] for d in delivered}
    for name in (WORK, LIMITED, OUTBOX, WFCHILD):
        for j in dead[name] + live[name]:
            if isinstance(j.payload, dict) and "key" in j.payload:
                keys_anywhere.add(j.payload["key"])
    event_keys = {e.payload["key"]: e for e in events if isinstance(e.payload, dict)}
    keys_anywhere |= set(event_keys)
    ends = Counter(t["end"] or "killed-unparked" for t in txns.values())
    res.counts["producer_transactions"] = dict(ends)
    for txn, t in txns.items():
        keys = [k for _, k, _ in t["items"]]
        present = [k for k in keys if k in ledger_by_key]
        if t["end"] in ("R", "P"):
            what = "rolled back" if t["end"] == "R" else "killed mid-transaction"
            left = [k for k in keys if k in ledger_by_key or k in keys_anywhere]
            if left:
                res.bad("rolled-back transaction left rows", f"{txn} ({what}) left {left}")
        elif t["end"] == "C":
            if len(present) != len(keys):
                res.bad("committed transaction lost rows", f"{txn}: {sorted(set(keys) - set(present))}")
        elif present and len(present) != len(keys):  # in doubt (X or killed unparked): all or nothing
            res.bad("partial commit", f"{txn}: {len(present)} of {len(keys)} rows")
        elif not present:
            left = [k for k in keys if k in keys_anywhere]
            if left:
                res.bad("uncommitted transaction left rows", f"{txn}: {left}")

    # -- every ledger row has its job ------------------------------------------
    acks: dict[int, int] = Counter()
    for e in execs:
        if e["outcome"] == "ack" and e["landed"] == 1:
            acks[e["job_id"]] += 1
    dead_by_id = {name: {j.id: j for j in jobs} for name, jobs in dead.items()}
    delivered_by_key = Counter(d["key"] for d in delivered)
    job_ids_of_ledger: dict[str, set[int]] = {WORK: set(), LIMITED: set(), WFCHILD: set()}
    for r in ledger:
        kind, ref = r["kind"], int(r["ref"])
        if kind in (WORK, LIMITED, WFCHILD):
            job_ids_of_ledger[kind].add(ref)
            if acks.get(ref, 0) == 0 and ref not in dead_by_id[kind]:
                res.bad("ledger row without its job", f"{r['key']} ({kind} job {ref}) never acked nor dead")
        elif kind == OUTBOX:
            if delivered_by_key[r["key"]] == 0 and ref not in dead_by_id[OUTBOX]:
                res.bad("outbox message never delivered", f"{r['key']} (job {ref})")
        elif kind == STREAM:
            ev = event_keys.get(r["key"])
            if ev is None or ev.offset != ref:
                res.bad("stream event missing", f"{r['key']} at offset {ref}")

    # -- acked exactly once, or dead with a reason --------------------------------
    for job_id, n in acks.items():
        if n > 1:
            res.bad("acked twice", f"job {job_id} acked {n} times")
    dead_reasons: Counter[str] = Counter()
    for name, jobs in dead.items():
        for j in jobs:
            dead_reasons[f"{name}: {j.last_error}"] += 1
            if not j.last_error:
                res.bad("dead without a reason", f"{name} job {j.id}")
            if acks.get(j.id, 0) and name != OUTBOX:
                res.bad("acked and dead", f"{name} job {j.id}")
            poison = isinstance(j.payload, dict) and j.payload.get("poison")
            if name == WFCHILD:
                continue  # checked with its parents below
            if not poison and name != OUTBOX:
                res.bad("unexpected dead letter", f"{name} job {j.id}: {j.last_error}")
    res.counts["dead_by_reason"] = dict(dead_reasons)

    # -- no job from nowhere ---------------------------------------------------------
    for e in execs:
        if e["queue"] in (WORK, LIMITED, WFCHILD) and e["job_id"] not in job_ids_of_ledger[e["queue"]]:
            res.bad("job without a committed ledger row", f"{e['queue']} job {e['job_id']} ran")
    for name in (WORK, LIMITED, WFCHILD):
        for j in dead[name]:
            if j.id not in job_ids_of_ledger[name]:
                res.bad("job without a committed ledger row", f"{name} job {j.id} is dead")

    # -- executions: fencing, overlaps, re-executions explained ---------------------
    by_job: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for e in execs:
        by_job[(e["queue"], e["job_id"])].append(e)
    valid: dict[tuple[str, int], list[tuple[float, float, str]]] = defaultdict(list)
    reasons: Counter[str] = Counter()
    stop_past_lease = cfg.vt + 2.5
    for (qname, job_id), runs in by_job.items():
        runs.sort(key=lambda e: e["t_start"])
        for i, e in enumerate(runs):
            ts = e["t_start"]
            nxt = runs[i + 1]["t_start"] if i + 1 < len(runs) else end_of_run
            te = e["t_end"] if e["t_end"] is not None else nxt
            landed = e["landed"] == 1
            if landed:
                # A zombie: stopped past its lease while running, yet its settle landed.
                for a, b in faults.stops.get(e["pid"], []):
                    if ts < a and b < e["t_end"] and b - a >= stop_past_lease:
                        res.bad(
                            "late ack landed (fencing)",
                            f"{qname} job {job_id} attempt {e['attempt']} pid {e['pid']} was stopped "
                            f"{b - a:.1f}s (lease {cfg.vt}s) and its {e['outcome']} still landed",
                        )
                valid[(qname, job_id)].append((ts, e["t_end"], e["uid"]))
                continue
            # The lease began at the claim, not at the handler's start: a process
            # stopped (or a database fault) between the two can lose it too.
            claimed = min(ts, e["t_claim"]) if e["t_claim"] is not None else ts
            hit = faults.impairment(e["pid"], claimed, te)
            if hit is None:
                res.bad(
                    "execution lost without a fault",
                    f"{qname} job {job_id} attempt {e['attempt']} pid {e['pid']}: "
                    f"outcome={e['outcome']} landed={e['landed']} err={e['err']}",
                )
                valid[(qname, job_id)].append((ts, te if te != INF else ts, e["uid"]))
                continue
            reasons[hit[1].split(" (")[0]] += 1
            res.reexecutions.append(
                f"{qname} job {job_id} attempt {e['attempt']} (pid {e['pid']}): {hit[1]}"
                + (f", then {e['outcome']} refused" if e["outcome"] in ("ack", "retry", "fail") else "")
            )
            valid[(qname, job_id)].append((ts, max(ts, hit[0]), e["uid"]))
        # Attempts that left no execution row: claimed, then lost before the handler
        # wrote its first row. Some fault must have happened around them.
        attempts = sorted(e["attempt"] for e in runs)
        missing = sorted(set(range(1, max(attempts) + 1)) - set(attempts))
        for a in missing:
            prev = [e for e in runs if e["attempt"] < a]
            after = [e for e in runs if e["attempt"] > a]
            lo = max((e["t_start"] for e in prev), default=runs[0]["t_start"] - 3600)
            hi = min((e["t_start"] for e in after), default=INF)
            why = faults.any_between(lo, hi)
            if why is None:
                res.bad("attempt lost without a fault", f"{qname} job {job_id} attempt {a}")
            else:
                reasons["claimed, lost before it started"] += 1
                res.reexecutions.append(f"{qname} job {job_id} attempt {a}: lost before it started ({why})")
    for key, ivs in valid.items():
        ivs.sort()
        for (a0, a1, ua), (b0, b1, ub) in itertools.pairwise(ivs):
            if b0 < a1:
                res.bad(
                    "overlapping valid executions",
                    f"{key[0]} job {key[1]}: {ua} [{a0:.3f}, {a1:.3f}] and {ub} [{b0:.3f}, {b1:.3f}]",
                )
    res.counts["executions"] = len(execs)
    res.counts["reexecutions_by_reason"] = dict(reasons)

    # -- the limited queue never ran more than its limit at once ---------------------
    points: list[tuple[float, int]] = []
    for (qname, _), ivs in valid.items():
        if qname == LIMITED:
            for a, b, _ in ivs:
                points += [(a, 1), (b, -1)]
    running = most = 0
    for _, d in sorted(points, key=lambda p: (p[0], p[1])):
        running += d
        most = max(most, running)
    res.counts["limited_max_concurrent"] = most
    if most > cfg.limit:
        res.bad("limit exceeded", f"{most} executions of {LIMITED} at once, limit {cfg.limit}")

    # -- schedules: one fire per boundary ----------------------------------------------
    ticks: dict[int, float] = {}
    for e in execs:
        if e["queue"] == TICK:
            ticks[e["job_id"]] = e["enqueued_at"]
    for j in dead[TICK]:
        ticks[j.id] = j.enqueued_at.timestamp()
    first, final, every = extra["schedule_first"], extra["schedule_final"], extra["schedule_every"]
    expected = int((final - first) // every)
    res.counts["schedule_fires"] = len(ticks)
    res.counts["schedule_boundaries"] = expected
    if len(ticks) != expected:
        res.bad("schedule fires", f"{len(ticks)} fires for {expected} boundaries")
    for k, job_id in enumerate(sorted(ticks)):
        if ticks[job_id] < first + k * every:
            res.bad("schedule fired early", f"fire {k} (job {job_id}) before its boundary")
            break

    # -- stream: every event in order, at least once -------------------------------------
    offsets = [e.offset for e in events]
    if offsets != sorted(set(offsets)):
        res.bad("stream order", "offsets read back are not strictly increasing")
    last_seq: dict[str, int] = {}
    for e in events:
        p = e.payload
        if p["key"] not in ledger_by_key:
            res.bad("stream event without its ledger row", f"offset {e.offset}")
        if last_seq.get(p["producer"], 0) >= p["seq"]:
            res.bad("stream order", f"{p['producer']} seq {p['seq']} at offset {e.offset} after a later one")
        last_seq[p["producer"]] = p["seq"]
    index = {o: i for i, o in enumerate(offsets)}
    pos, replays = -1, 0
    for s in sorted(seen, key=lambda r: r["t"]):
        idx = index.get(s["off"])
        if idx is None:
            res.bad("subscriber saw an unknown event", f"offset {s['off']}")
            continue
        if idx > pos + 1:
            res.bad(
                "subscriber skipped events", f"after offset {offsets[pos] if pos >= 0 else 0} came {s['off']}"
            )
        elif idx <= pos:
            replays += 1
        pos = max(pos, idx)
    if offsets and pos != len(offsets) - 1:
        res.bad("subscriber did not catch up", f"saw up to index {pos} of {len(offsets)}")
    res.counts["stream_events"] = len(events)
    res.counts["stream_replays"] = replays

    # -- outbox: every committed message delivered, duplicates explained -------------
    dup = sum(n - 1 for n in delivered_by_key.values() if n > 1)
    for key in delivered_by_key:
        if key not in ledger_by_key:
            res.bad("outbox delivered an uncommitted message", key)
    res.counts["outbox_deliveries"] = len(delivered)
    res.counts["outbox_duplicates"] = dup
    if dup and not any(f["kind"] in ("kill_worker",) or f["kind"].startswith("pg_") for f in faults_list):
        res.bad("outbox duplicates without a fault", f"{dup}")

    # -- workflows: a child runs only after every parent was acked -------------------
    links = _rows(store, "SELECT child, parent FROM wf")
    parents_of: dict[int, list[int]] = defaultdict(list)
    for link in links:
        parents_of[int(link["child"])].append(int(link["parent"]))
    acked_at: dict[int, float] = {}
    for e in execs:
        if e["queue"] == WORK and e["outcome"] == "ack" and e["landed"] == 1:
            acked_at[e["job_id"]] = e["t_end"]
    first_run: dict[int, float] = {}
    for e in execs:
        if e["queue"] == WFCHILD:
            first_run[e["job_id"]] = min(first_run.get(e["job_id"], INF), e["t_start"])
    dead_children = dead_by_id[WFCHILD]
    for child, parents in parents_of.items():
        if child not in job_ids_of_ledger[WFCHILD]:
            continue  # its transaction did not commit (checked above)
        parent_dead = [p for p in parents if p in dead_by_id[WORK]]
        if child in first_run:
            unacked = [p for p in parents if p not in acked_at]
            if unacked:
                res.bad(
                    "workflow child ran before its parents were acked", f"child {child}, parents {unacked}"
                )
            elif first_run[child] < max(acked_at[p] for p in parents):
                res.bad("workflow child released early", f"child {child} started before a parent's ack")
        elif child in dead_children:
            if not parent_dead:
                res.bad(
                    "workflow child dead though its parents were acked",
                    f"child {child}: {dead_children[child].last_error}",
                )
        else:
            res.bad("workflow child never ran", f"child {child} (parents {parents})")
    res.counts["workflow_children"] = len([c for c in parents_of if c in job_ids_of_ledger[WFCHILD]])
    res.counts["workflow_children_cancelled"] = len(dead_children)

    res.counts["ledger_rows"] = len(ledger)
    res.counts["jobs"] = len(
        {(e["queue"], e["job_id"]) for e in execs} | {(n, j.id) for n, js in dead.items() for j in js}
    )
    res.counts["reexecutions"] = len(res.reexecutions)
    return res
