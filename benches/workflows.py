"""Workflows' cost (SPEC §25): fan-in acks and a fan-out release.

    python benches/workflows.py [-n 10000] [--rounds 3] [--engines sqlite,postgres]

Per engine and round:

- **fan-in**: N parents and one child enqueued ``after`` all of them, and N
  plain jobs, in one store; a plain job and a parent are claimed and acked in
  turn, one at a time, and only the ``ack`` calls are timed (so both see the
  same load).
  Reported: the mean per-parent ack against the mean plain ack (goal <= 1.2x),
  the same for the median acks (SQLite's automatic checkpoints, a few ms
  each, land in the means, on a parent's ack more often: it writes one page
  more), and that the child was released exactly by the last ack.
- **fan-out**: one parent with N children (``enqueue_many(after=[parent])``);
  the parent's ack, which releases every child in one statement, is timed.

Prints each round and the medians.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import uuid

import alkstore

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
PAYLOAD = {"to": "alice@example.com", "n": 1}


#: Postgres schemas this run made (each store its own, never the default
#: schema another build may be using), dropped at the end.
SCHEMAS: list[str] = []


def open_store(engine: str) -> alkstore.Store:
    if engine == "sqlite":
        return alkstore.open(os.path.join(tempfile.mkdtemp(prefix="bench-wf-"), "q.db"))
    SCHEMAS.append(f"bench_wf_{uuid.uuid4().hex[:8]}")
    return alkstore.open(DSN, schema=SCHEMAS[-1])


def drop_schemas() -> None:
    if not SCHEMAS:
        return
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as pg:
        for schema in SCHEMAS:
            pg.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def name(what: str) -> str:
    return f"bench-{what}-{uuid.uuid4().hex[:8]}"


def enqueue(q: alkstore.Queue, n: int) -> list[int]:
    ids: list[int] = []
    for i in range(0, n, 1000):
        ids += q.enqueue_many([PAYLOAD] * min(1000, n - i))
    return ids


def written() -> int:
    """Bytes this process has written through system calls (Linux), else 0:
    for SQLite, the WAL frames a commit appends, a measure the load of a
    shared machine does not move."""
    try:
        with open("/proc/self/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("wchar"))
    except OSError:
        return 0


def timed_ack(q: alkstore.Queue) -> tuple[float, int]:
    """Claims one job of `q` and acks it; the seconds and bytes of the ack call."""
    job = q.claim("w")
    assert job is not None
    w, t = written(), time.perf_counter()
    assert job.ack()
    return time.perf_counter() - t, written() - w


def fan_in_acks(engine: str, n: int) -> tuple[float, float, float, float]:
    """The mean ack of a plain job and of a parent of one child of `n`
    parents, taken in turn from one store so both see the same load, the
    ratio of the bytes they wrote, and the ratio of their median acks.

    The means carry SQLite's automatic checkpoints (a few ms each, every
    1000 WAL frames), which land on whichever commit crosses the mark: on a
    parent's ack, which writes one page more, more often. The medians leave
    them out."""
    with open_store(engine) as store:
        plain, parents, children = (
            store.queue(name("plain")),
            store.queue(name("parents")),
            store.queue(name("child")),
        )
        enqueue(plain, n)
        ids = enqueue(parents, n)
        child = children.enqueue(PAYLOAD, after=ids)
        assert children.stats().waiting == 1
        plain_s = parent_s = 0.0
        plain_b = parent_b = 0
        plain_each: list[float] = []
        parent_each: list[float] = []
        # Which of the pair goes first is drawn per pair: the store's
        # periodic work (SQLite looks at the WAL every 32 writes, and a pair
        # is 4 writes) would otherwise always land on the same one of them.
        order = random.Random(n)
        for i in range(n):
            for q in (plain, parents) if order.random() < 0.5 else (parents, plain):
                s, b = timed_ack(q)
                if q is plain:
                    plain_s, plain_b = plain_s + s, plain_b + b
                    plain_each.append(s)
                else:
                    parent_s, parent_b = parent_s + s, parent_b + b
                    parent_each.append(s)
            if i == n - 2:
                assert children.stats().waiting == 1, "released before the last parent"
        st = children.stats()
        assert (st.waiting, st.pending) == (0, 1), st
        job = children.claim("w")
        assert job is not None and job.id == child
        job.ack()
        medians = statistics.median(parent_each) / statistics.median(plain_each)
        return plain_s / n, parent_s / n, parent_b / plain_b if plain_b else float("nan"), medians


def fan_out_release(engine: str, n: int) -> float:
    with open_store(engine) as store:
        parents, children = store.queue(name("parent")), store.queue(name("children"))
        parent = parents.enqueue(PAYLOAD)
        for i in range(0, n, 1000):
            children.enqueue_many([PAYLOAD] * min(1000, n - i), after=[parent])
        assert children.stats().waiting == n
        job = parents.claim("w")
        assert job is not None
        t = time.perf_counter()
        assert job.ack()
        seconds = time.perf_counter() - t
        st = children.stats()
        assert (st.waiting, st.pending) == (0, n), st
        children.purge_dead()
        return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engines", default="sqlite,postgres")
    args = ap.parse_args()
    rows = []
    for engine in args.engines.split(","):
        ratios, fan_ins, plains, releases, bytes_ratios, median_ratios = [], [], [], [], [], []
        for r in range(args.rounds):
            plain, fan_in_ack, bytes_ratio, median_ratio = fan_in_acks(engine, args.n)
            release = fan_out_release(engine, args.n)
            bytes_ratios.append(bytes_ratio)
            median_ratios.append(median_ratio)
            ratios.append(fan_in_ack / plain)
            fan_ins.append(fan_in_ack)
            plains.append(plain)
            releases.append(release)
            print(
                f"{engine} round {r + 1}: plain ack {plain * 1e6:7.1f} us, fan-in parent ack "
                f"{fan_in_ack * 1e6:7.1f} us ({fan_in_ack / plain:.2f}x; medians {median_ratio:.2f}x; "
                f"bytes written {bytes_ratio:.2f}x), "
                f"fan-out release of {args.n} "
                f"{release * 1e3:8.1f} ms",
                flush=True,
            )
        rows.append(
            (
                engine,
                statistics.median(plains) * 1e6,
                statistics.median(fan_ins) * 1e6,
                statistics.median(ratios),
                statistics.median(releases) * 1e3,
                statistics.median(bytes_ratios),
                statistics.median(median_ratios),
            )
        )
    print()
    print(
        f"| engine | plain ack | parent ack, child of {args.n} parents | ratio (goal <= 1.2x) "
        f"| ratio of the median acks | bytes written by the client, ratio | release of {args.n} children |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for engine, plain, fan_in, ratio, release, bytes_ratio, median_ratio in rows:
        print(
            f"| {engine} | {plain:.1f} us | {fan_in:.1f} us | {ratio:.2f}x | {median_ratio:.2f}x "
            f"| {bytes_ratio:.2f}x "
            f"| {release:.1f} ms "
            f"({release * 1e3 / args.n:.1f} us per child) |"
        )


if __name__ == "__main__":
    try:
        main()
    finally:
        drop_schemas()
