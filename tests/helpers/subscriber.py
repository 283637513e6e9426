"""Subscribes to a stream and prints each event's offset as it handles it,
working a little on each; the parent kills it with SIGKILL mid-stream.

usage: subscriber.py LOCATION SCHEMA|- STREAM CONSUMER
"""

from __future__ import annotations

import sys
import time
from typing import Any

import alkstore


def main() -> None:
    location, schema, stream, consumer = sys.argv[1:5]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    store = alkstore.open(location, **options)
    print("ready", flush=True)
    for ev in store.stream(stream).subscribe(consumer):
        print(f"got {ev.offset}", flush=True)
        time.sleep(0.02)


if __name__ == "__main__":
    main()
