"""Running user code for a claimed job: the one place that turns a return,
an exception or ``Fail`` into ack / retry / dead, and keeps the lease alive
while the code runs. Used by ``Outbox.deliver`` and ``Worker``.

Outcomes (SPEC §7, §11):

* return            → ``ack``
* ``alkstore.Fail`` → ``fail(str(exc))``: dead now
* other exception   → ``retry(repr(exc))`` on the engine's curve (dead at budget)

The code may settle the job itself first — ``job.ack(tx=tx)`` to complete it
with its own business write, ``job.retry(delay=...)`` to snooze it — and
then the outcome is what it did; only a job nobody settled while the lease
held is ``lost``.

While the code runs a heartbeat thread renews the lease every third of the
job's visibility timeout, so slow work is not reclaimed and run twice. A
heartbeat that is refused (the lease lapsed or the job was cancelled) stops
the thread; the outcome's op then returns False and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from alkstore._aio import release
from alkstore._core import JobHandle
from alkstore._errors import Fail

__all__ = ["Outcome", "heartbeating", "run_async", "run_sync", "settle"]

Outcome = Literal["acked", "retried", "failed", "released", "lost"]

#: What ``JobHandle._settled`` says the code itself did.
_SETTLED: dict[str | None, Outcome] = {
    "acked": "acked",
    "retried": "retried",
    "failed": "failed",
    "released": "released",
}

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
    outcome: Outcome
    if error is None:
        landed, outcome = job.ack(), "acked"
    elif isinstance(error, Fail):
        landed, outcome = job.fail(str(error)), "failed"
    else:
        landed, outcome = job.retry(repr(error)), "retried"
    if landed:
        return outcome
    # Nothing left to settle: the code did it through this handle (its
    # outcome counts), or the lease lapsed or the job was cancelled (lost).
    # (A handler's op inside a transaction that then rolled back still
    # reads as settled; our own op lands in that case unless the lease
    # lapsed too.)
    return _SETTLED.get(job._settled, "lost")


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
    """The asyncio twin of :func:`run_sync`; database calls leave the loop free.

    Cancelled while ``fn`` runs, it gives the job back (pending at once,
    attempt refunded) before re-raising: nobody would settle it otherwise,
    and it would sit leased to nobody until the lease lapsed.
    """
    loop = asyncio.get_running_loop()
    with heartbeating(job):
        try:
            await fn(job)
        except asyncio.CancelledError:
            # A second cancellation stops this wait, not the release.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(loop.run_in_executor(None, release, job))
            raise
        except Exception as exc:
            error: BaseException | None = exc
        else:
            error = None
    return await loop.run_in_executor(None, settle, job, error)
