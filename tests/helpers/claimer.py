"""Claims and acks jobs until the queue is empty (a worker process of test_concurrency).

usage: claimer.py LOCATION SCHEMA|- QUEUE OUTFILE [BATCH]

With BATCH > 1 it uses claim_batch(BATCH) and one ack_batch per batch.
Writes one line per claimed job: "<id> <attempts> <1 if the ack landed else 0>".
"""

from __future__ import annotations

import os
import sys
from typing import Any

import alkstore


def main() -> None:
    location, schema, queue, out = sys.argv[1:5]
    batch = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    worker = f"claimer-{os.getpid()}"
    with alkstore.open(location, **options) as store, open(out, "w", encoding="utf-8") as f:
        q = store.queue(queue)
        if batch == 1:
            while (job := q.claim(worker)) is not None:
                landed = job.ack()
                f.write(f"{job.id} {job.attempts} {int(landed)}\n")
            return
        while jobs := q.claim_batch(worker, batch, timeout=0):
            landed = q.ack_batch(jobs) == len(jobs)
            for job in jobs:
                f.write(f"{job.id} {job.attempts} {int(landed)}\n")


if __name__ == "__main__":
    main()
