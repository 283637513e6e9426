"""Enqueues one job after a pause and prints the wall-clock time its commit returned.

usage: enqueuer.py LOCATION SCHEMA|- QUEUE DELAY_S
"""

from __future__ import annotations

import sys
import time
from typing import Any

import alkstore


def main() -> int:
    location, schema, queue, delay = sys.argv[1:5]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    with alkstore.open(location, **options) as store:
        q = store.queue(queue)
        time.sleep(float(delay))
        q.enqueue({"from": "another process"})
        print(f"committed {time.time():.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
