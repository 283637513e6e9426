"""What the pre-fork tests' applications share (tests/test_contrib_prefork.py):
each is loaded once by ``gunicorn --preload`` in its master, which forks the
workers, and answers ``POST /enqueue/N?of=K`` by enqueueing a task's job, then
holding the request until K jobs are pending. A sync gunicorn worker serves one
request at a time, so K requests held at once are K different workers."""

from __future__ import annotations

import os
import time
from typing import Any

import alkstore

#: The process that loaded the application: gunicorn's master under --preload.
LOADED_IN = os.getpid()
HOLD_S = 60.0


def place() -> tuple[str, dict[str, Any]]:
    """The store's location and ``alkstore.open`` options, from the environment."""
    schema = os.environ.get("ALK_PREFORK_SCHEMA", "-")
    return os.environ["ALK_PREFORK_LOCATION"], ({} if schema == "-" else {"schema": schema})


def hold_until_pending(q: alkstore.Queue, n: int) -> None:
    """Polls the store until ``n`` jobs are pending (the other workers' too)."""
    deadline = time.monotonic() + HOLD_S
    while q.stats().pending < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {n} jobs pending after {HOLD_S} s")
        time.sleep(0.02)


def answer(job: int, own_store: bool) -> dict[str, Any]:
    """The reply: the job, the worker's pid, and whether the worker used a store
    of its own (not one the loading process opened, which it inherited)."""
    return {"job": job, "pid": os.getpid(), "loaded_in": LOADED_IN, "own_store": own_store}
