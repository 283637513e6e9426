"""Publishes events one transaction each, sleeping inside every transaction so
publishers to one stream overlap (the commit-order test of test_stream_processes).

usage: stream_publisher.py LOCATION SCHEMA|- STREAM COUNT
Prints "ready" once open, waits for a line on stdin, publishes, prints "done".
"""

from __future__ import annotations

import os
import random
import sys
import time
from typing import Any

import alkstore


def main() -> None:
    location, schema, stream, count = sys.argv[1:5]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    rng = random.Random(os.getpid())
    with alkstore.open(location, **options) as store:
        s = store.stream(stream)
        print("ready", flush=True)
        sys.stdin.readline()
        for n in range(int(count)):
            with store.transaction() as tx:
                s.publish({"pid": os.getpid(), "n": n}, tx=tx)
                # Held open after taking the offset: the window in which a
                # later offset could commit first, were offsets not serialised.
                time.sleep(rng.uniform(0, 0.01))
        print("done", flush=True)


if __name__ == "__main__":
    main()
