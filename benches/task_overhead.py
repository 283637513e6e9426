"""What a task registry adds per job over a plain queue and Worker (SPEC §22),
on the client: the enqueue and the Worker's drain, measured apart.

    python benches/task_overhead.py [-n 10000] [--engines sqlite,postgres] [--rounds 5]

For each engine and round, in turn: N one-commit enqueues of workload E's
payload through ``q.enqueue(payload)`` and through ``task.enqueue(**payload)``
(binding and JSON check included), then a drain of N jobs by
``Worker(concurrency=1)`` with a no-op handler and by ``tasks.worker(concurrency=1)``
with a no-op task. Prints this process's CPU microseconds per job (all its
threads; the database server's CPU is not in it) as medians over --rounds, and
the task side's ratio to the plain side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import alkstore

DSN = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
TO = "alice@example.com"
PAYLOAD = {"to": TO, "n": 1}
TASK = "e_work"


@contextmanager
def fresh(engine: str) -> Iterator[alkstore.Store]:
    """A new store: a SQLite file in a temp dir, or a Postgres schema dropped after."""
    if engine == "sqlite":
        with alkstore.open(os.path.join(tempfile.mkdtemp(prefix="bench-"), "t.db")) as store:
            yield store
        return
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    try:
        with alkstore.open(DSN, schema=schema) as store:
            yield store
    finally:
        import psycopg

        with psycopg.connect(DSN, autocommit=True) as pg:
            pg.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


#: The registry, bound to each fresh store in turn (as `alkstore worker --tasks` binds one).
tasks = alkstore.Tasks()


@tasks.task(queue="e", name=TASK)
def work(to: str, n: int) -> None:
    return None


def cpu_us_per_job(n: int, run: Callable[[], None]) -> float:
    cpu = time.process_time()
    run()
    return (time.process_time() - cpu) / n * 1e6


def enqueue(engine: str, n: int, kind: str) -> float:
    with fresh(engine) as store:
        q = store.queue("e")
        tasks.bind(store)

        def plain() -> None:
            for _ in range(n):
                q.enqueue(PAYLOAD)

        def task() -> None:
            for _ in range(n):
                work.enqueue(to=TO, n=1)  # the payload above, through the task

        return cpu_us_per_job(n, plain if kind == "plain" else task)


def drain(engine: str, n: int, kind: str) -> float:
    with fresh(engine) as store:
        q = store.queue("e")
        tasks.bind(store)
        payload: Any = PAYLOAD if kind == "plain" else {"task": TASK, "args": [], "kwargs": PAYLOAD}
        for i in range(0, n, 1000):
            q.enqueue_many([payload] * min(1000, n - i))
        if kind == "plain":
            worker = alkstore.Worker(store, concurrency=1, worker_id="bench")
            worker.handler("e")(lambda _payload, _job: None)
        else:
            worker = tasks.worker(concurrency=1, worker_id="bench")

        def stop_when_drained() -> None:
            while worker.counts.acked < n:
                time.sleep(0.005)
            worker.stop()

        watcher = threading.Thread(target=stop_when_drained)
        watcher.start()
        cpu = cpu_us_per_job(n, worker.run)
        watcher.join()
        assert worker.counts.acked == n, worker.counts
        return cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    for engine in args.engines.split(","):
        got: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for phase, measure in (("enqueue", enqueue), ("drain", drain)):
                for kind in ("plain", "tasks"):
                    got.setdefault((phase, kind), []).append(measure(engine, args.n, kind))
        for phase in ("enqueue", "drain"):
            plain = statistics.median(got[(phase, "plain")])
            task = statistics.median(got[(phase, "tasks")])
            print(
                f"{engine:9s} {phase:8s} plain {plain:6.1f}  tasks {task:6.1f} client CPU µs per job"
                f"  ({task / plain:.2f}x, +{task - plain:.1f} µs)",
                flush=True,
            )


if __name__ == "__main__":
    main()
