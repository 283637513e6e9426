"""One of the processes of the shared-file load test (SPEC §16): alkstore and
the application's own sqlite3 write the same file at once, and this process
writes down everything it saw commit.

usage: shared_file_load.py PATH TAG SECONDS OUTFILE

Three threads run until SECONDS have passed:
- jobs: enqueue (every fifth in a store.transaction together with a business
  row), then claim and ack with this process's worker id;
- app: business rows through sqlite3, BEGIN IMMEDIATE ... COMMIT, mostly on a
  long-lived connection, every fourth on a connection opened and closed
  around it (closing a descriptor is what used to drop alkstore's locks);
- churn: opens and closes a second alkstore store on the file now and then
  (alkstore closing its descriptors used to drop the application's locks).
OUTFILE gets JSON: enqueued and acked job ids, committed business notes.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import time
from collections.abc import Callable

import alkstore

QUEUE = "load"


def main() -> None:
    path, tag, seconds, outfile = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    deadline = time.monotonic() + seconds
    store = alkstore.open(path)
    q = store.queue(QUEUE)
    enqueued: list[int] = []
    acked: list[int] = []
    notes: list[str] = []
    errors: list[str] = []

    def jobs() -> None:
        k = 0
        while time.monotonic() < deadline:
            k += 1
            if k % 5 == 0:
                note = f"{tag}-tx-{k}"
                with store.transaction() as tx:
                    tx.execute("INSERT INTO biz(note) VALUES (?)", [note])
                    job_id = q.enqueue({"tag": tag, "k": k}, tx=tx)
                notes.append(note)
            else:
                job_id = q.enqueue({"tag": tag, "k": k})
            enqueued.append(job_id)
            job = q.claim(f"worker-{tag}")
            if job is not None and job.ack():
                acked.append(job.id)

    def app() -> None:
        conn = sqlite3.connect(path, timeout=10, isolation_level=None)
        k = 0
        while time.monotonic() < deadline:
            k += 1
            own = k % 4 == 0
            c = sqlite3.connect(path, timeout=10, isolation_level=None) if own else conn
            note = f"{tag}-app-{k}"
            try:
                c.execute("BEGIN IMMEDIATE")
                c.execute("INSERT INTO biz(note) VALUES (?)", (note,))
                c.execute("COMMIT")
                notes.append(note)
                c.execute("SELECT count(*) FROM biz").fetchone()
            finally:
                if own:
                    c.close()
        conn.close()

    def churn() -> None:
        while time.monotonic() < deadline:
            other = alkstore.open(path)
            other.queue(QUEUE).stats()
            other.close()
            time.sleep(0.2)

    def guarded(name: str, fn: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}")

        t = threading.Thread(target=run)
        t.start()
        return t

    threads = [guarded(name, f) for name, f in (("jobs", jobs), ("app", app), ("churn", churn))]
    for t in threads:
        t.join()
    store.close()
    with open(outfile, "w") as f:
        json.dump({"enqueued": enqueued, "acked": acked, "notes": notes, "errors": errors}, f)


if __name__ == "__main__":
    main()
