"""Blocks in a claim on an empty queue after saying so; the parent interrupts it with SIGINT.

usage: waiter.py LOCATION SCHEMA|- QUEUE
Exits 130 after a KeyboardInterrupt, 0 if the claim returned by itself.
"""

from __future__ import annotations

import sys

import alkstore


def main() -> int:
    location, schema, queue = sys.argv[1:4]
    options = {} if schema == "-" else {"schema": schema}
    with alkstore.open(location, **options) as store:
        q = store.queue(queue)
        print("waiting", flush=True)
        try:
            q.claim("waiter", timeout=60)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
