"""A Worker process on a limited queue (SPEC §24) whose handlers report what
they observe: one line per job, ``job ID GROUP START END`` (``time.monotonic_ns``,
system-wide on Linux, so lines of several processes compare), START taken after
the claim and END before the ack, so each interval lies inside the job's
processing time. It stops once the queue has no pending or processing job.

A job whose payload has ``"hold_until_gone": ID`` keeps running until job ID is
gone from the queue (acked), waiting on that row, and reports
``held ID gone|timeout`` first: proof that another group ran meanwhile.

usage: limited_worker.py LOCATION SCHEMA|- QUEUE CONCURRENCY
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import alkstore


def main() -> None:
    location, schema, queue, concurrency = sys.argv[1:5]
    store = alkstore.open(location) if schema == "-" else alkstore.open(location, schema=schema)
    q = store.queue(queue)
    worker = alkstore.Worker(store, concurrency=int(concurrency))
    lines: list[str] = []
    lock = threading.Lock()

    @worker.handler(queue)
    def handle(payload: dict[str, Any], job: alkstore.JobHandle) -> None:
        start = time.monotonic_ns()
        other = payload.get("hold_until_gone")
        if other is not None:
            deadline = time.monotonic() + 60
            gone = False
            while time.monotonic() < deadline:
                if q.get_job(other) is None:
                    gone = True
                    break
                time.sleep(0.01)
            with lock:
                lines.append(f"held {other} {'gone' if gone else 'timeout'}")
        time.sleep(float(payload.get("sleep", 0.0)))
        end = time.monotonic_ns()
        with lock:
            lines.append(f"job {job.id} {job.payload.get('group', '-')} {start} {end}")

    runner = threading.Thread(target=worker.run)
    runner.start()
    try:
        while True:
            s = q.stats()
            if s.pending == 0 and s.scheduled == 0 and s.processing == 0:
                break
            time.sleep(0.05)
    finally:
        worker.stop()
        runner.join()
    with lock:
        print("\n".join(lines), flush=True)
    store.close()


if __name__ == "__main__":
    main()
