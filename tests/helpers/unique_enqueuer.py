"""Enqueues one job with a unique key when told to, and prints the id it got.

usage: unique_enqueuer.py LOCATION SCHEMA|- QUEUE KEY
Prints "ready" once the store is open, waits for a line on stdin, enqueues,
prints the id.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import alkstore


def main() -> None:
    location, schema, queue, key = sys.argv[1:5]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    with alkstore.open(location, **options) as store:
        q = store.queue(queue)
        print("ready", flush=True)
        sys.stdin.readline()
        print(q.enqueue({"pid": os.getpid()}, unique_key=key), flush=True)


if __name__ == "__main__":
    main()
