"""Another process on the store's file, through Python's sqlite3 only.

usage: sqlite_peer.py ACTION PATH [ARG]
  try-write PATH   BEGIN IMMEDIATE with a 100 ms busy timeout, then roll back;
                   prints "ok" or "busy"
  touch PATH       opens, reads and closes (the last connection out of a WAL
                   file checkpoints and deletes it if it can); prints "done"
  count PATH SQL   prints the single integer SQL returns
"""

from __future__ import annotations

import sqlite3
import sys


def main() -> None:
    action, path = sys.argv[1:3]
    conn = sqlite3.connect(path, timeout=0.1, isolation_level=None)
    try:
        if action == "try-write":
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                print("busy", flush=True)
                return
            conn.execute("ROLLBACK")
            print("ok", flush=True)
        elif action == "touch":
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
            print("done", flush=True)
        elif action == "count":
            print(conn.execute(sys.argv[3]).fetchone()[0], flush=True)
        else:
            raise SystemExit(f"unknown action {action!r}")
    finally:
        conn.close()


if __name__ == "__main__":
    main()
