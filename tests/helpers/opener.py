"""Opens the target (creating its tables if nobody has yet) and enqueues one job.

usage: opener.py LOCATION SCHEMA|- QUEUE
Prints the new job id.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import alkstore


def main() -> None:
    location, schema, queue = sys.argv[1:4]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    with alkstore.open(location, **options) as store:
        print(store.queue(queue).enqueue({"pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    main()
