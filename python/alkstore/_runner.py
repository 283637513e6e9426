"""Running user code for a claimed job: the one place that turns a return,
an exception or ``Fail`` into ack / retry / dead, and keeps the lease alive
while the code runs. Used by ``Outbox.deliver`` and ``Worker``.

Outcomes (SPEC §7, §11):

* return            → ``ack``
* ``alkstore.Fail`` → ``fail(str(exc))``: dead now
* other exception   → ``retry(repr(exc))`` on the engine's curve (dead at budget)

While the code runs a heartbeat thread renews the lease every third of the
job's visibility timeout, so slow work is not reclaimed and run twice. A
heartbeat that is refused (the lease lapsed or the job was cancelled) stops
the thread; the outcome's op then returns False and changes nothing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from alkstore._core import JobHandle
from alkstore._errors import Fail

__all__ = ["Outcome", "heartbeating", "run_async", "run_sync", "settle"]

Outcome = Literal["acked", "retried", "failed", "lost"]

#: Never heartbeat more often than this, whatever the lease.
_MIN_BEAT_S = 1.0


def _beat_interval(job: JobHandle) -> float:
    lease = (job.deadline - job.claimed_at).total_seconds()
    return max(_MIN_BEAT_S, lease / 3)


@contextmanager
def heartbeating(job: JobHandle) -> Iterator[None]:
    """Renews ``job``'s lease in the background for the duration of the block."""
    done = threading.Event()
    every = _beat_interval(job)

    def beat() -> None:
        while not done.wait(every):
            try:
                if not job.heartbeat():
                    return  # lapsed or taken: nothing left to keep alive
            except Exception:  # a transient database error: try again next beat
                continue

    t = threading.Thread(target=beat, name=f"alkstore-heartbeat-{job.id}", daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()


def settle(job: JobHandle, error: BaseException | None) -> Outcome:
    """Records the outcome of running ``job``: ack, fail or retry."""
    if error is None:
        return "acked" if job.ack() else "lost"
    if isinstance(error, Fail):
        return "failed" if job.fail(str(error)) else "lost"
    return "retried" if job.retry(repr(error)) else "lost"


def run_sync(job: JobHandle, fn: Callable[[JobHandle], Any]) -> Outcome:
    """Runs ``fn(job)`` with heartbeats and settles the job by its outcome."""
    with heartbeating(job):
        try:
            fn(job)
        except Exception as exc:
            error: BaseException | None = exc
        else:
            error = None
    return settle(job, error)


async def run_async(job: JobHandle, fn: Callable[[JobHandle], Awaitable[Any]]) -> Outcome:
    """The asyncio twin of :func:`run_sync`; database calls leave the loop free."""
    loop = asyncio.get_running_loop()
    with heartbeating(job):
        try:
            await fn(job)
        except Exception as exc:
            error: BaseException | None = exc
        else:
            error = None
    return await loop.run_in_executor(None, settle, job, error)
