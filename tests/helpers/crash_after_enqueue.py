"""Scenario 4 of SPEC §16 with a crash: alkstore and the application's sqlite3
share the file; the application opens, reads and closes a connection; after
the parent has had another process open and close the file, this process
enqueues jobs and dies without closing anything.

usage: crash_after_enqueue.py PATH QUEUE N
Prints "ready", waits for a line on stdin, enqueues N jobs, prints their ids
as one line, then calls os._exit(0).
"""

from __future__ import annotations

import os
import sqlite3
import sys

import alkstore


def main() -> None:
    path, queue, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = alkstore.open(path)
    q = store.queue(queue)
    q.enqueue({"first": True})
    app = sqlite3.connect(path)
    app.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    app.close()
    print("ready", flush=True)
    sys.stdin.readline()
    ids = [q.enqueue({"i": i}) for i in range(n)]
    print(" ".join(map(str, ids)), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
