"""A worker module for `python -m alkstore worker worker_app:worker` (test_worker, test_cli).

The store comes from APP_TARGET (a SQLite path or a Postgres URL) and
APP_SCHEMA (empty on SQLite). The handler of queue "app" prints
"started <id>", sleeps payload["sleep"] seconds, then prints "done <id>".
"""

from __future__ import annotations

import os
import time
from typing import Any

import alkstore

_schema = os.environ.get("APP_SCHEMA") or None
_target = os.environ["APP_TARGET"]
store = alkstore.open(_target, schema=_schema) if _schema else alkstore.open(_target)
worker = alkstore.Worker(store, concurrency=2, worker_id="app-worker")
not_a_worker = 42


@worker.handler("app")
def handle(payload: dict[str, Any], job: alkstore.JobHandle) -> None:
    print(f"started {job.id}", flush=True)
    time.sleep(float(payload.get("sleep", 0)))
    print(f"done {job.id}", flush=True)
