"""Blocks in a claim on an empty queue after saying so; the parent interrupts it with SIGINT.

usage: waiter.py LOCATION SCHEMA|- QUEUE
Exits 130 after a KeyboardInterrupt, 0 if the claim returned by itself.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import alkstore


def main() -> int:
    location, schema, queue = sys.argv[1:4]
    # Ctrl-C must reach us even when started from a background job, which
    # inherits SIGINT ignored (and Python then installs no handler of its own).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
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
