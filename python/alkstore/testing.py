"""Helpers for testing code that uses tasks (SPEC §22), in the spirit of
Oban.Testing and River's rivertest: run the jobs your code enqueued, in the
test's own thread, and look at the calls it made.

```python
from alkstore.testing import drain, enqueued

signup("ada@example.com")                    # your code: enqueues send_email
assert [c.args for c in enqueued(send_email)] == [("ada@example.com",)]
result = drain(tasks)                        # runs it (and what it enqueues)
assert result.acked == 1
```
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from alkstore import _runner
from alkstore._core import JobHandle
from alkstore._dispatch import route_of
from alkstore._tasks import Task, Tasks

__all__ = ["Call", "DrainResult", "drain", "enqueued"]

#: The worker name drained jobs are claimed under.
WORKER_ID = "alkstore-testing"


@dataclass(frozen=True)
class DrainResult:
    """What ``drain`` did: jobs acked, retried (counting the attempt),
    dead (``Fail``, or a failure on the last attempt) and snoozed."""

    acked: int = 0
    retried: int = 0
    dead: int = 0
    snoozed: int = 0

    @property
    def ran(self) -> int:
        """Every job run."""
        return self.acked + self.retried + self.dead + self.snoozed


@dataclass(frozen=True)
class Call:
    """One pending call of a task: its arguments as a worker will see them
    (JSON-decoded: tuples are lists) and the job's id."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    job_id: int


def drain(tasks: Tasks, queue: str | None = None) -> DrainResult:
    """Runs every ready job of the registry's queues (or of ``queue``) in the
    calling thread, until none is ready, jobs the tasks enqueue included, and
    counts the outcomes. Outcomes land as a worker's do: a return acks with
    the value as the job's result (a job waiting for it is released and runs
    here too), a failure is retried
    on the curve (run again here only if it is ready again at once), ``Fail``
    dead-letters, ``Snooze`` puts the job off. ``async def`` tasks run on an
    event loop of this call's own, so call ``drain`` outside a running loop.
    A sync task's ``timeout`` is not enforced here (its thread is this one)."""
    store = tasks.store
    names = [queue] if queue is not None else tasks.queues
    queues = [store.queue(n) for n in names]
    counts = {"acked": 0, "retried": 0, "dead": 0, "snoozed": 0}
    loop: asyncio.AbstractEventLoop | None = None
    try:
        ran = True
        while ran:
            ran = False
            for q in queues:
                job = q.claim(WORKER_ID)
                if job is None:
                    continue
                ran = True
                fn, is_async, timeout = route_of(tasks._route, job)
                call = _calling(fn)
                if is_async:
                    loop = loop or asyncio.new_event_loop()
                    outcome = loop.run_until_complete(_runner.run_async(job, call, None, timeout, True))
                else:
                    outcome = _runner.run_sync(job, call, results=True)
                if (outcome == "retried" and job.attempts >= job.max_attempts) or outcome == "failed":
                    counts["dead"] += 1
                elif outcome in counts:
                    counts[outcome] += 1
    finally:
        if loop is not None:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()
    return DrainResult(**counts)


def _calling(fn: Callable[[Any, JobHandle], Any]) -> Callable[[JobHandle], Any]:
    """``fn`` as the runner calls code: with the job alone."""
    return lambda job: fn(job.payload, job)


def enqueued(task: Task[Any, Any]) -> list[Call]:
    """The pending calls of ``task`` (ready, scheduled, or waiting for their
    parents, SPEC §25), oldest first."""
    q = task._queue()
    calls: list[Call] = []
    before: int | None = None
    while page := q.live_jobs(limit=1000, before_id=before):
        for job in page:
            p = job.payload
            if job.state in ("pending", "waiting") and isinstance(p, dict) and p.get("task") == task.name:
                calls.append(Call(tuple(p.get("args", ())), dict(p.get("kwargs", {})), job.id))
        before = page[-1].id
    calls.reverse()
    return calls
