#!/usr/bin/env python3
"""alkstore stream throughput on SQLite and Postgres, through the public Python API.

  publish      one commit per event
  publish-tx   --batch events per transaction (publish(tx=tx) in a loop)
  publishers   1 vs --publishers threads publishing to ONE stream, one commit each,
               and the same threads each on its OWN stream (what the per-stream
               head-row lock costs: docs/adr/0006-stream-commit-order.md)
  held         the same 1 / --publishers / own-stream comparison, each publish in its
               own transaction kept open --hold-ms after publishing (a caller's
               business work): the head-row lock is held for that long
  replay       read(after, limit=1000) page by page from offset 0

    python benches/streams.py                       # everything, both engines
    python benches/streams.py -n 20000 --engines postgres --workloads publishers

Postgres uses ALKSTORE_TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/test)
in a fresh schema per run, dropped at the end.
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from collections.abc import Callable

from alkstore import Event, Store, Stream
from workloads import Target  # the same per-engine store setup and cleanup

PAYLOAD = {"order": 1234, "status": "paid", "amount": "19.90"}
WORKLOADS = ("publish", "publish-tx", "publishers", "held", "replay")


def report(workload: str, engine: str, phase: str, n: int, seconds: float) -> float:
    rate = n / seconds if seconds > 0 else float("inf")
    print(
        f"{workload:11s} {engine:9s} {phase:28s} {rate:10.0f} events/s  ({n} in {seconds:.2f} s)", flush=True
    )
    return rate


def fresh_stream(store: Store, workload: str) -> Stream:
    return store.stream(f"{workload}-{uuid.uuid4().hex[:8]}")


def publish_each(s: Stream, n: int) -> None:
    for _ in range(n):
        s.publish(PAYLOAD)


def publish_tx(store: Store, s: Stream, n: int, batch: int) -> None:
    for start in range(0, n, batch):
        with store.transaction() as tx:
            for _ in range(min(batch, n - start)):
                s.publish(PAYLOAD, tx=tx)


# ---------------------------------------------------------------- workloads
def workload_publish(target: Target, n: int) -> None:
    with target.store() as store:
        s = fresh_stream(store, "p")
        t = time.perf_counter()
        publish_each(s, n)
        report("publish", target.engine, "one commit each", n, time.perf_counter() - t)


def workload_publish_tx(target: Target, n: int, batch: int) -> None:
    with target.store() as store:
        s = fresh_stream(store, "ptx")
        t = time.perf_counter()
        publish_tx(store, s, n, batch)
        report("publish-tx", target.engine, f"{batch} per transaction", n, time.perf_counter() - t)


def run_threads(k: int, fn: Callable[[int], None]) -> float:
    threads = [threading.Thread(target=fn, args=(i,)) for i in range(k)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t


def workload_publishers(target: Target, n: int, k: int) -> None:
    with target.store() as store:
        one = fresh_stream(store, "one")
        report(
            "publishers",
            target.engine,
            "1 thread, one stream",
            n,
            run_threads(1, lambda _: publish_each(one, n)),
        )
        shared = fresh_stream(store, "shared")
        seconds = run_threads(k, lambda _: publish_each(shared, n // k))
        report("publishers", target.engine, f"{k} threads, one stream", n // k * k, seconds)
        own = [fresh_stream(store, f"own{i}") for i in range(k)]
        seconds = run_threads(k, lambda i: publish_each(own[i], n // k))
        report("publishers", target.engine, f"{k} threads, own streams", n // k * k, seconds)
        offsets = [e.offset for e in read_all(shared)]
        assert offsets == list(range(1, n // k * k + 1)), "gapless offsets under concurrent publishers"


def read_all(s: Stream) -> list[Event]:
    events: list[Event] = []
    while page := s.read(after=events[-1].offset if events else 0, limit=1000):
        events.extend(page)
    return events


def publish_held(store: Store, s: Stream, n: int, hold_s: float) -> None:
    for _ in range(n):
        with store.transaction() as tx:
            s.publish(PAYLOAD, tx=tx)
            time.sleep(hold_s)


def workload_held(target: Target, n: int, k: int, hold_ms: float) -> None:
    hold = hold_ms / 1000
    with target.store() as store:
        phase = f"{hold_ms:g} ms held"
        one = fresh_stream(store, "hone")
        seconds = run_threads(1, lambda _: publish_held(store, one, n, hold))
        report("held", target.engine, f"1 thread, {phase}", n, seconds)
        shared = fresh_stream(store, "hshared")
        seconds = run_threads(k, lambda _: publish_held(store, shared, n // k, hold))
        report("held", target.engine, f"{k} thr one stream, {phase}", n // k * k, seconds)
        own = [fresh_stream(store, f"hown{i}") for i in range(k)]
        seconds = run_threads(k, lambda i: publish_held(store, own[i], n // k, hold))
        report("held", target.engine, f"{k} thr own streams, {phase}", n // k * k, seconds)


def workload_replay(target: Target, n: int) -> None:
    with target.store() as store:
        s = fresh_stream(store, "r")
        publish_tx(store, s, n, 1000)  # untimed fill
        t = time.perf_counter()
        after, seen = 0, 0
        while page := s.read(after=after, limit=1000):
            for ev in page:
                _ = ev.payload
            seen += len(page)
            after = page[-1].offset
        report("replay", target.engine, "read pages of 1000", seen, time.perf_counter() - t)


# ---------------------------------------------------------------- main
def available(target: Target) -> bool:
    try:
        with target.store():
            return True
    except Exception as exc:  # a missing engine must not stop the other one
        print(f"{target.engine}: skipped: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=5000, help="events per workload (default 5000)")
    ap.add_argument("--replay", type=int, default=100_000, help="events to replay (default 100000)")
    ap.add_argument("--batch", type=int, default=128, help="events per transaction in publish-tx")
    ap.add_argument("--publishers", type=int, default=4, help="concurrent publisher threads (default 4)")
    ap.add_argument("--hold-ms", type=float, default=2.0, help="transaction hold time in 'held' (default 2)")
    ap.add_argument("--engines", default="sqlite,postgres", help="comma list of: sqlite, postgres")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma list of: " + ", ".join(WORKLOADS))
    args = ap.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    workloads = [w for w in args.workloads.split(",") if w]
    for bad in set(engines) - {"sqlite", "postgres"}:
        ap.error(f"unknown engine {bad!r}")
    for bad in set(workloads) - set(WORKLOADS):
        ap.error(f"unknown workload {bad!r}")
    if min(args.n, args.replay, args.batch, args.publishers) < 1:
        ap.error("-n, --replay, --batch and --publishers must be >= 1")

    runs: dict[str, Callable[[Target], None]] = {
        "publish": lambda t: workload_publish(t, args.n),
        "publish-tx": lambda t: workload_publish_tx(t, args.n, args.batch),
        "publishers": lambda t: workload_publishers(t, args.n, args.publishers),
        "held": lambda t: workload_held(t, max(args.publishers, args.n // 10), args.publishers, args.hold_ms),
        "replay": lambda t: workload_replay(t, args.replay),
    }
    print(f"alkstore streams: n={args.n} replay={args.replay} engines={','.join(engines)}", flush=True)
    failed = False
    for engine in engines:
        target = Target(engine)
        try:
            if not available(target):
                continue
            for name in workloads:
                try:
                    runs[name](target)
                except Exception as exc:  # report and go on with the other workloads
                    failed = True
                    print(f"{name:11s} {engine:9s} FAILED: {type(exc).__name__}: {exc}", flush=True)
        finally:
            target.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
