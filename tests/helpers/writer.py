"""Opens a transaction, writes 100 jobs and one business row, reports, then hangs.

The parent kills it with SIGKILL mid-transaction.

usage: writer.py LOCATION SCHEMA|- QUEUE TABLE
"""

from __future__ import annotations

import sys
import time
from typing import Any

import alkstore


def main() -> None:
    location, schema, queue, table = sys.argv[1:5]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    store = alkstore.open(location, **options)
    q = store.queue(queue)
    ph = "?" if store.engine == "sqlite" else "$1"
    with store.transaction() as tx:
        for i in range(100):
            q.enqueue({"i": i}, tx=tx)
        tx.execute(f"INSERT INTO {table} (note) VALUES ({ph})", ["uncommitted"])
        print("ready", flush=True)
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
