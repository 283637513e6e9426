"""Claims and acks N jobs of a queue, prints "acked", then stays open (the
store is not closed) until its stdin closes: its counts must reach the
database by the store's own flusher, not by close.

usage: acker.py LOCATION SCHEMA|- QUEUE N
"""

from __future__ import annotations

import sys
from typing import Any

import alkstore


def main() -> int:
    location, schema, queue, n = sys.argv[1:5]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    store = alkstore.open(location, **options)
    q = store.queue(queue)
    for _ in range(int(n)):
        job = q.claim("acker", timeout=10)
        assert job is not None and job.ack()
    print("acked", flush=True)
    sys.stdin.read()
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
