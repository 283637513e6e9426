"""Waits in a claim on a queue, with a 30 s poll so only a wake can end the wait early.

usage: paused_claimer.py LOCATION SCHEMA|- QUEUE
Prints "waiting" before the claim, then the id it claimed (or "none").
"""

from __future__ import annotations

import sys
from typing import Any

import alkstore


def main() -> None:
    location, schema, queue = sys.argv[1:4]
    options: dict[str, Any] = {"poll_interval_s": 30.0}
    if schema != "-":
        options["schema"] = schema
    with alkstore.open(location, **options) as store:
        q = store.queue(queue)
        print("waiting", flush=True)
        job = q.claim("paused-claimer", timeout=60)
        print(job.id if job is not None else "none", flush=True)


if __name__ == "__main__":
    main()
