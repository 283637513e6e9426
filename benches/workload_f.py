"""Workload F (SPEC §20): Postgres churn, N jobs through one queue at a steady rate.

    python benches/workload_f.py [-n 1000000] [--rate 800] [--consumers 2]
        [--autovacuum server|on] [--tune] [--vacuum-every K] [--json FILE]

A fresh schema per run (``bench_f_<hex>``, dropped at the end). One producer
process enqueues at a steady rate, ``enqueue_many`` every 25 ms, paced against
the monotonic clock (it catches up if a batch ran late), until N jobs are in.
C consumer processes loop ``claim(timeout=0)`` + ``ack()``, sleeping 1 ms when
the queue is empty, and time each claim and each ack with ``perf_counter``.
The parent polls the counts every 50 ms and reads the jobs table's sizes and
``pg_stat_user_tables`` when each tenth of N has been acked.

Per 10 % slice (the slice ends at the ack of job k·N/10, by the consumers' own
clocks):

- ``jobs/s``: N/10 over the slice's wall time. While the consumers keep up this
  is only the producer's rate, so it hides a slowdown; hence also
- ``capacity``: what the consumers could do flat out, C / mean(claim + ack) of
  the slice's jobs, in jobs per second (an estimate: busy consumers contend more
  for the 2 cores than idle ones);
- claim p50 / p99 of the claims that returned a job, and the mean of the empty
  claims (those scan the ready index too), in ms;
- ``backlog``: jobs enqueued and not yet acked at the slice's end;
- the jobs table's heap and index sizes (all indexes, and ``jobs_ready``, the
  claim's index, alone), and ``n_dead_tup`` at the slice's end;
- ``autovac`` and ``vacuum``: the table's ``autovacuum_count`` and
  ``vacuum_count`` so far; the second counts the store's own VACUUMs (ADR 0024)
  and the bench's;
- the whole machine's busy CPU in the slice (``/proc/stat``, all cores), to see
  a neighbour's load.

Options that change the server or the table, to back the maintenance decision:

- ``--autovacuum on``: ``ALTER SYSTEM SET autovacuum = on`` and a reload for the
  run; ``ALTER SYSTEM RESET autovacuum`` and a reload afterwards, in a
  ``finally``, and the restored value is printed. It is the whole server's
  setting. ``server`` (the default) runs with the server as it is.
- ``--tune``: per-table storage parameters on the bench's jobs table, as a
  migration would set them (only read by autovacuum).
- ``--probe P`` (5,000 by default; 0 for none): after the last slice, on the
  table as the run left it, enqueue P jobs and claim + ack them from one
  process, timing the claims; run ``VACUUM`` on the jobs table; do it again. The
  two halves are a minute apart at most, so unlike the slices they share the
  machine's load, and their difference is what the dead rows cost the claim.
- ``--vacuum-every K``: the parent also runs ``VACUUM`` on the jobs table, from
  its own connection, each time K more jobs have been acked, and reports each
  VACUUM's duration: a fixed cadence to set beside the store's own (ADR 0024).

``--max-seconds S`` stops a run that cannot finish and reports its whole slices.

The default rate, 800 jobs/s, leaves the 2 consumers headroom on the 2-core
development machine: flooded (``-n 50000 --rate 4000``) they drained 750-1,940
jobs/s per slice there, with Postgres and the producer on the same cores.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import tempfile
import threading
import time
import uuid
from array import array
from bisect import bisect_left
from typing import Any

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
QUEUE = "f"
PAYLOAD = {"to": "alice@example.com", "n": 1}
TICK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1
BATCH_EVERY_S = 0.025
SLICES = 10


def busy_s() -> float:
    """Busy CPU seconds of the whole machine since boot (all cores)."""
    with open("/proc/stat", encoding="ascii") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / TICK  # minus idle and iowait


def loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


# ------------------------------------------------------------------ processes
def producer(schema: str, n: int, rate: float, enqueued: Any, ready: Any, go: Any) -> None:
    import alkstore

    with alkstore.open(DSN, schema=schema) as store:
        q = store.queue(QUEUE)
        with ready.get_lock():
            ready.value += 1
        go.wait()
        t0, done, tick = time.perf_counter(), 0, 0
        while done < n:
            due = min(n, int(rate * (time.perf_counter() - t0)))
            while done < due:
                k = min(due - done, 1000)
                q.enqueue_many([PAYLOAD] * k)
                done += k
                enqueued.value = done
            tick += 1
            pause = t0 + tick * BATCH_EVERY_S - time.perf_counter()
            if pause > 0:
                time.sleep(pause)


def consumer(schema: str, slot: int, acked: Any, ready: Any, go: Any, stop: Any, out: str) -> None:
    import alkstore

    me = f"w{os.getpid()}"
    ts, claim_s, ack_s = array("d"), array("d"), array("d")  # jobs: ack time, claim and ack durations
    empty_ts, empty_s = array("d"), array("d")  # claims that found nothing
    with alkstore.open(DSN, schema=schema) as store:
        q = store.queue(QUEUE)
        with ready.get_lock():
            ready.value += 1
        go.wait()
        n, clock = 0, time.perf_counter
        while not stop.is_set():
            t0 = clock()
            job = q.claim(me, timeout=0)
            t1 = clock()
            if job is None:
                empty_ts.append(t1)
                empty_s.append(t1 - t0)
                time.sleep(0.001)
                continue
            _ = job.payload
            job.ack()
            t2 = clock()
            ts.append(t2)
            claim_s.append(t1 - t0)
            ack_s.append(t2 - t1)
            n += 1
            acked[slot] = n
    with open(out, "wb") as f:
        for a in (ts, claim_s, ack_s, empty_ts, empty_s):
            array("q", [len(a)]).tofile(f)
            a.tofile(f)


def read_arrays(path: str) -> list[array[float]]:
    arrays: list[array[float]] = []
    with open(path, "rb") as f:
        for _ in range(5):
            size = array("q")
            size.fromfile(f, 1)
            a = array("d")
            a.fromfile(f, size[0])
            arrays.append(a)
    return arrays


# ------------------------------------------------------------------ the database side
SETTINGS = (
    "autovacuum",
    "autovacuum_naptime",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_cost_delay",
    "autovacuum_vacuum_cost_limit",
    "vacuum_cost_limit",
    "autovacuum_max_workers",
    "shared_buffers",
    "server_version",
)

TUNE = (
    "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,"
    " autovacuum_vacuum_cost_delay = 0, autovacuum_vacuum_insert_scale_factor = 0,"
    " autovacuum_vacuum_insert_threshold = 10000"
)


def sample(pg: Any, schema: str) -> dict[str, Any]:
    row = pg.execute(
        "SELECT pg_relation_size(c.oid), pg_indexes_size(c.oid), pg_total_relation_size(c.oid),"
        " pg_relation_size(format('%%I.jobs_ready', %s::text)::regclass),"
        " s.n_live_tup, s.n_dead_tup, s.autovacuum_count, s.vacuum_count, s.last_autovacuum::text"
        " FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid"
        " WHERE s.schemaname = %s AND s.relname = 'jobs'",
        (schema, schema),
    ).fetchone()
    keys = ("heap", "indexes", "total", "ready_index", "live", "dead", "autovacuums", "vacuums", "last_av")
    return dict(zip(keys, row, strict=True))


def set_autovacuum(on: bool) -> str:
    """ALTER SYSTEM on (or RESET) and reload; returns SHOW autovacuum from a new session."""
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as pg:
        pg.execute("ALTER SYSTEM SET autovacuum = on" if on else "ALTER SYSTEM RESET autovacuum")
        pg.execute("SELECT pg_reload_conf()")
    want = "on" if on else None
    for _ in range(50):
        time.sleep(0.1)
        with psycopg.connect(DSN, autocommit=True) as pg:
            shown = str(pg.execute("SHOW autovacuum").fetchone()[0])  # type: ignore[index]
        if want is None or shown == want:
            return shown
    return shown


class Vacuumer(threading.Thread):
    """Runs VACUUM on the bench's jobs table each time `every` more jobs were acked."""

    def __init__(self, schema: str, every: int, acked: Any) -> None:
        super().__init__(daemon=True)
        self.schema, self.every, self.acked = schema, every, acked
        self.stop = threading.Event()
        self.durations: list[float] = []

    def run(self) -> None:
        import psycopg

        with psycopg.connect(DSN, autocommit=True) as pg:
            nxt = self.every
            while not self.stop.wait(0.05):
                if sum(self.acked) >= nxt:
                    t0 = time.perf_counter()
                    pg.execute(f'VACUUM "{self.schema}".jobs')
                    self.durations.append(time.perf_counter() - t0)
                    nxt = (sum(self.acked) // self.every + 1) * self.every


def probe(schema: str, pg: Any, n: int) -> dict[str, Any]:
    """On the table as the run left it: enqueue n jobs, claim + ack them from this one process, VACUUM,
    and do it again. Both halves run within a minute of each other, so they share the machine's load."""
    import alkstore

    def drain(q: Any) -> list[float]:
        for i in range(0, n, 1000):
            q.enqueue_many([PAYLOAD] * min(1000, n - i))
        lat = []
        while True:
            t0 = time.perf_counter()
            job = q.claim("probe", timeout=0)
            t1 = time.perf_counter()
            if job is None:
                return lat
            job.ack()
            lat.append(t1 - t0)

    with alkstore.open(DSN, schema=schema) as store:
        q = store.queue(QUEUE)
        before = drain(q)
        t0 = time.perf_counter()
        pg.execute(f'VACUUM "{schema}".jobs')
        vacuum_s = time.perf_counter() - t0
        vacuumed = sample(pg, schema)
        after = drain(q)
    return {
        "jobs": n,
        "before_p50_ms": pct(before, 0.5) * 1e3,
        "before_p99_ms": pct(before, 0.99) * 1e3,
        "vacuum_s": vacuum_s,
        "after_p50_ms": pct(after, 0.5) * 1e3,
        "after_p99_ms": pct(after, 0.99) * 1e3,
        "after_vacuum": vacuumed,
    }


# ------------------------------------------------------------------ the run
def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def run(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    import alkstore

    n, c = args.n, args.consumers
    schema = f"bench_f_{uuid.uuid4().hex[:8]}"
    with alkstore.open(DSN, schema=schema) as s:
        s.queue(QUEUE).stats()  # migrations ran
    pg = psycopg.connect(DSN, autocommit=True)
    if args.tune:
        pg.execute(f'ALTER TABLE "{schema}".jobs SET ({TUNE})')
    settings = {k: str(pg.execute(f"SHOW {k}").fetchone()[0]) for k in SETTINGS}  # type: ignore[index]
    reloptions = pg.execute(
        "SELECT reloptions FROM pg_class WHERE oid = format('%%I.jobs', %s::text)::regclass", (schema,)
    ).fetchone()[0]  # type: ignore[index]
    tmp = tempfile.mkdtemp(prefix="bench-f-")
    ctx = mp.get_context("spawn")
    acked, enqueued, ready = ctx.RawArray("q", c), ctx.RawValue("q", 0), ctx.Value("i", 0)
    go, stop = ctx.Event(), ctx.Event()
    outs = [os.path.join(tmp, f"c{i}.bin") for i in range(c)]
    procs = [
        ctx.Process(target=consumer, args=(schema, i, acked, ready, go, stop, outs[i])) for i in range(c)
    ]
    prod = ctx.Process(target=producer, args=(schema, n, args.rate, enqueued, ready, go))
    for p in [*procs, prod]:
        p.start()
    while ready.value < c + 1:
        time.sleep(0.05)
    vac = Vacuumer(schema, args.vacuum_every, acked) if args.vacuum_every else None
    load0 = loadavg()
    at = [(0.0, sample(pg, schema), busy_s(), 0)]  # (parent time, sizes, machine busy s, backlog)
    t0 = time.perf_counter()
    go.set()
    if vac:
        vac.start()
    k, last_print = 1, t0
    try:
        while k <= SLICES:
            time.sleep(0.05)
            if args.max_seconds and time.perf_counter() - t0 > args.max_seconds:
                print(f"  stopped at --max-seconds {args.max_seconds}: {k - 1} slices complete", flush=True)
                break
            done = sum(acked)
            if done >= k * n // SLICES:
                at.append((time.perf_counter() - t0, sample(pg, schema), busy_s(), enqueued.value - done))
                if not args.quiet:
                    print(f"  {k * 10:3d} % acked at {at[-1][0]:7.1f} s  {at[-1][1]}", flush=True)
                k += 1
            elif not prod.is_alive() and prod.exitcode not in (0, None):
                raise RuntimeError(f"producer exited with {prod.exitcode}")
            elif time.perf_counter() - last_print > 60 and not args.quiet:
                last_print = time.perf_counter()
                print(
                    f"  {done:,} acked, {enqueued.value - done:,} waiting, {last_print - t0:.0f} s",
                    flush=True,
                )
    finally:
        stop.set()
        if vac:
            vac.stop.set()
            vac.join()
        for p in [*procs, prod]:
            p.join(60)
        load1 = loadavg()
    # The slices, by the consumers' own ack times.
    data = [read_arrays(o) for o in outs]
    jobs = sorted(
        (t - t0, cl, ak) for a in data for t, cl, ak in zip(a[0], a[1], a[2], strict=True) if t - t0 >= 0
    )
    empties = sorted((t - t0, e) for a in data for t, e in zip(a[3], a[4], strict=True))
    slices = len(at) - 1
    bounds = [0.0] + [jobs[k * n // SLICES - 1][0] for k in range(1, slices + 1)]
    empty_times = [t for t, _ in empties]
    rows = []
    for i in range(slices):
        lo, hi = i * n // SLICES, (i + 1) * n // SLICES
        sl = jobs[lo:hi]
        claims = [cl for _, cl, _ in sl]
        busy = [cl + ak for _, cl, ak in sl]
        e0, e1 = bisect_left(empty_times, bounds[i]), bisect_left(empty_times, bounds[i + 1])
        empty = [e for _, e in empties[e0:e1]]
        wall = bounds[i + 1] - bounds[i]
        end = at[i + 1][1]
        rows.append(
            {
                "slice": f"{i * 10}-{(i + 1) * 10} %",
                "wall_s": wall,
                "jobs_per_s": len(sl) / wall,
                "capacity": c / statistics.fmean(busy),
                "claim_p50_ms": pct(claims, 0.50) * 1e3,
                "claim_p99_ms": pct(claims, 0.99) * 1e3,
                "ack_p99_ms": pct([ak for _, _, ak in sl], 0.99) * 1e3,
                "empty_claims": len(empty),
                "empty_mean_ms": statistics.fmean(empty) * 1e3 if empty else float("nan"),
                "backlog": at[i + 1][3],
                "heap_mib": end["heap"] / 2**20,
                "index_mib": end["indexes"] / 2**20,
                "ready_index_mib": end["ready_index"] / 2**20,
                "dead_tup": end["dead"],
                "autovacuums": end["autovacuums"],
                "vacuums": end["vacuums"],
                "machine_cpu_pct": (at[i + 1][2] - at[i][2]) / (at[i + 1][0] - at[i][0]) / NCPU * 100,
            }
        )
    result = {
        "n": n,
        "rate": args.rate,
        "consumers": c,
        "autovacuum": args.autovacuum,
        "tune": args.tune,
        "vacuum_every": args.vacuum_every,
        "settings": settings,
        "reloptions": reloptions,
        "load_before": load0,
        "load_after": load1,
        "wall_s": bounds[-1],
        "slices": rows,
        "vacuum_s": vac.durations if vac else [],
        "end": at[-1][1],
        "probe": probe(schema, pg, args.probe) if args.probe else None,
    }
    pg.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    pg.close()
    for o in outs:
        os.unlink(o)
    os.rmdir(tmp)
    return result


def report(r: dict[str, Any]) -> None:
    s = r["settings"]
    print(
        f"F  n={r['n']:,}  rate={r['rate']:,.0f}/s  consumers={r['consumers']}  autovacuum={s['autovacuum']}"
        f"  tune={r['tune']}  vacuum_every={r['vacuum_every'] or '-'}  wall={r['wall_s']:.0f} s"
    )
    print("   server: " + ", ".join(f"{k}={v}" for k, v in s.items() if k != "autovacuum"))
    print(f"   table reloptions: {r['reloptions']}")
    print(f"   load average before: {r['load_before']}  after: {r['load_after']}")
    print(
        "slice      jobs/s  capacity  claim p50  claim p99  ack p99  empty claims (mean ms)  backlog"
        "  heap MiB  idx MiB  ready MiB   dead tup  autovac  vacuum  machine CPU %"
    )
    for x in r["slices"]:
        print(
            f"{x['slice']:9s} {x['jobs_per_s']:7.0f} {x['capacity']:9.0f} {x['claim_p50_ms']:10.2f}"
            f" {x['claim_p99_ms']:10.2f} {x['ack_p99_ms']:8.2f}"
            f" {x['empty_claims']:9d} ({x['empty_mean_ms']:6.2f})"
            f"      {x['backlog']:7d} {x['heap_mib']:9.1f} {x['index_mib']:8.1f} {x['ready_index_mib']:10.1f}"
            f" {x['dead_tup']:10d} {x['autovacuums']:8d} {x['vacuums']:7d} {x['machine_cpu_pct']:14.0f}"
        )
    first, last = r["slices"][0], r["slices"][-1]
    print(
        f"last/first: jobs/s {last['jobs_per_s'] / first['jobs_per_s']:.2f}x"
        f"  capacity {last['capacity'] / first['capacity']:.2f}x"
        f"  claim p99 {last['claim_p99_ms'] / first['claim_p99_ms']:.2f}x"
    )
    if r["vacuum_s"]:
        v = r["vacuum_s"]
        print(f"VACUUM runs: {len(v)}, seconds each: median {statistics.median(v):.2f}, max {max(v):.2f}")
    if r["probe"]:
        p, v = r["probe"], r["probe"]["after_vacuum"]
        print(
            f"probe, {p['jobs']:,} jobs claimed + acked by one process on the table as left:"
            f" claim p50 / p99 {p['before_p50_ms']:.2f} / {p['before_p99_ms']:.2f} ms;"
            f" VACUUM {p['vacuum_s']:.2f} s (then heap {v['heap'] / 2**20:.1f} MiB,"
            f" indexes {v['indexes'] / 2**20:.1f} MiB, dead {v['dead']});"
            f" after: {p['after_p50_ms']:.2f} / {p['after_p99_ms']:.2f} ms"
        )
    e = r["end"]
    print(
        f"end: heap {e['heap'] / 2**20:.1f} MiB, indexes {e['indexes'] / 2**20:.1f} MiB"
        f" (jobs_ready {e['ready_index'] / 2**20:.1f}), total {e['total'] / 2**20:.1f} MiB,"
        f" n_live_tup {e['live']}, n_dead_tup {e['dead']},"
        f" autovacuums {e['autovacuums']}, vacuums {e['vacuums']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--rate", type=float, default=800.0, help="jobs enqueued per second")
    ap.add_argument("--consumers", type=int, default=2)
    ap.add_argument("--autovacuum", choices=("server", "on"), default="server")
    ap.add_argument("--tune", action="store_true", help="per-table autovacuum parameters on the jobs table")
    ap.add_argument("--vacuum-every", type=int, default=0, metavar="K", help="VACUUM after every K acks")
    ap.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    ap.add_argument("--max-seconds", type=float, default=0, help="stop after this long, report whole slices")
    ap.add_argument("--probe", type=int, default=5000, metavar="P", help="jobs of the end probe (0: none)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args()
    if args.autovacuum == "on":
        print(f"SHOW autovacuum -> {set_autovacuum(True)} for the run", flush=True)
    try:
        r = run(args)
    finally:
        if args.autovacuum == "on":
            print(f"SHOW autovacuum restored -> {set_autovacuum(False)}", flush=True)
    report(r)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
