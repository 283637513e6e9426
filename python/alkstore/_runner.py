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

While the code runs, its lease is renewed every third of the job's
visibility timeout, so slow work is not reclaimed and run twice. One
heartbeat thread per process serves every running job from a timetable
(starting and joining a thread per job cost more CPU than the job's own
claim and ack). A heartbeat that is refused (the lease lapsed or the job was
cancelled) ends that job's beats; the outcome's op then returns False and
changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from alkstore._aio import release
from alkstore._core import JobHandle
from alkstore._errors import Fail

__all__ = ["Ack", "Outcome", "heartbeating", "run_async", "run_sync", "settle"]

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
    return max(_MIN_BEAT_S, job._lease_s / 3)


class _Beats:
    """The process's heartbeat timetable: one thread renews every registered
    lease when it falls due, and sleeps while nothing is registered."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        # [due, seq, job, every, live]: ordered by due; a removed entry is
        # marked dead and dropped when it reaches the top.
        self._heap: list[list[Any]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._dead = 0
        # The thread sleeps with no timeout only when parked (nothing was
        # registered for a whole _MIN_BEAT_S); else it looks at least every
        # _MIN_BEAT_S, which is never later than a new entry falls due.
        self._parked = False

    def reset_in_child(self) -> None:
        """After fork: the parent's jobs are not the child's to keep alive,
        its thread did not come along, and its lock may have been held."""
        self._cond = threading.Condition()
        self._heap = []
        self._thread = None
        self._dead = 0
        self._parked = False

    def add(self, job: JobHandle, every: float) -> list[Any]:
        entry = [time.monotonic() + every, next(self._seq), job, every, True]
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="alkstore-heartbeat", daemon=True)
                self._thread.start()
            elif self._parked or every < _MIN_BEAT_S:
                # Waking the thread for every short job handed it the GIL
                # twice per job (a third of a busy Worker's CPU); a thread
                # that is not parked wakes in time by itself.
                self._parked = False
                self._cond.notify()
        return entry

    def remove(self, entry: list[Any]) -> None:
        # A beat already on its way only renews a lease the outcome ends.
        with self._cond:
            entry[4] = False
            entry[2] = None  # a dead entry may wait long for compaction: not with the job
            self._dead += 1
            # Dead entries wait for their due time to be dropped; at thousands
            # of short jobs a second that is a heap mostly of the dead.
            if self._dead > 1024 and self._dead * 2 > len(self._heap):
                self._heap = [e for e in self._heap if e[4]]
                heapq.heapify(self._heap)
                self._dead = 0

    def _run(self) -> None:
        idle = False  # the last look found nothing registered
        while True:
            with self._cond:
                while True:
                    while self._heap and not self._heap[0][4]:
                        heapq.heappop(self._heap)
                        self._dead = max(0, self._dead - 1)
                    if not self._heap:
                        if idle:  # empty for a whole beat: sleep until add() wakes us
                            self._parked = True
                            while self._parked:
                                self._cond.wait()
                        else:
                            self._cond.wait(_MIN_BEAT_S)
                        idle = not idle
                        continue
                    idle = False
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        entry = heapq.heappop(self._heap)
                        job, every = entry[2], entry[3]  # under the lock: remove() clears the job
                        break
                    self._cond.wait(min(wait, _MIN_BEAT_S))
            try:
                alive = bool(job.heartbeat())
            except Exception:  # a transient database error: try again next beat
                alive = True
            if alive and entry[4]:
                entry[0] = time.monotonic() + every
                with self._cond:
                    heapq.heappush(self._heap, entry)


_BEATS = _Beats()
os.register_at_fork(after_in_child=_BEATS.reset_in_child)


@contextmanager
def heartbeating(job: JobHandle) -> Iterator[None]:
    """Renews ``job``'s lease in the background for the duration of the block."""
    entry = _BEATS.add(job, _beat_interval(job))
    try:
        yield
    finally:
        _BEATS.remove(entry)


#: An ack that may do more in the same transaction (the Worker claims its
#: next job with it, ADR 0022): whether it landed, or None to fall back to
#: ``job.ack()``.
Ack = Callable[[JobHandle], "bool | None"]


def settle(job: JobHandle, error: BaseException | None, ack: Ack | None = None) -> Outcome:
    """Records the outcome of running ``job``: ack, fail or retry."""
    outcome: Outcome
    if error is None:
        landed = None if ack is None else ack(job)
        if landed is None:
            landed = job.ack()
        outcome = "acked"
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


def run_sync(job: JobHandle, fn: Callable[[JobHandle], Any], ack: Ack | None = None) -> Outcome:
    """Runs ``fn(job)`` with heartbeats and settles the job by its outcome
    (a return acks through ``ack`` when given)."""
    # heartbeating() spelled out: this runs once per job on the Worker's hot path.
    entry = _BEATS.add(job, _beat_interval(job))
    try:
        fn(job)
    except Exception as exc:
        error: BaseException | None = exc
    else:
        error = None
    finally:
        _BEATS.remove(entry)
    return settle(job, error, ack)


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
