"""Claims one job, reports it, then hangs forever: the parent kills it with SIGKILL.

usage: holder.py LOCATION SCHEMA|- QUEUE
"""

from __future__ import annotations

import sys
import time
from typing import Any

import alkstore


def main() -> None:
    location, schema, queue = sys.argv[1:4]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    store = alkstore.open(location, **options)
    job = store.queue(queue).claim("holder")
    if job is None:
        print("empty", flush=True)
        return
    print(f"claimed {job.id} {job.attempts}", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
