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

Settling is tried again when it fails for a moment (``DatabaseError.transient``:
a SQLite file whose write lock the application held past ``busy_timeout_ms``,
a lost Postgres connection), with heartbeats going on, for as long as the
lease may hold: a job whose work succeeded is not run again, nor dead-lettered
at its last attempt, for a busy second. Only a lost lease ends that.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from alkstore._aio import release
from alkstore._core import JobHandle
from alkstore._errors import DatabaseError, Fail, StoreClosed

__all__ = ["Ack", "OnRetry", "Outcome", "heartbeating", "run_async", "run_sync", "settle"]

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
#: The first pause before settling again after a transient error; it doubles
#: up to the second, and the heartbeats go on meanwhile.
_SETTLE_PAUSE_S = 0.05
_SETTLE_PAUSE_MAX_S = 1.0

log = logging.getLogger("alkstore.worker")

# The slots of a timetable entry (a list, so the heap orders entries by due
# time, then by sequence number).
_DUE, _SEQ, _JOB, _EVERY, _LIVE, _RENEWED, _REFUSED = range(7)


def _beat_interval(job: JobHandle) -> float:
    return max(_MIN_BEAT_S, job._lease_s / 3)


class _Beats:
    """The process's heartbeat timetable: one thread renews every registered
    lease when it falls due, and sleeps while nothing is registered."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        # Entries (the _DUE… slots): ordered by due time; a removed entry
        # is marked dead and dropped when it reaches the top.
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
        now = time.monotonic()
        # _RENEWED: when the lease was last known to hold (the claim, then
        # each heartbeat that landed); _REFUSED: a heartbeat said it no longer does.
        entry = [now + every, next(self._seq), job, every, True, now, False]
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
            entry[_LIVE] = False
            entry[_JOB] = None  # a dead entry may wait long for compaction: not with the job
            self._dead += 1
            # Dead entries wait for their due time to be dropped; at thousands
            # of short jobs a second that is a heap mostly of the dead.
            if self._dead > 1024 and self._dead * 2 > len(self._heap):
                self._heap = [e for e in self._heap if e[_LIVE]]
                heapq.heapify(self._heap)
                self._dead = 0

    def _run(self) -> None:
        idle = False  # the last look found nothing registered
        while True:
            with self._cond:
                while True:
                    while self._heap and not self._heap[0][_LIVE]:
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
                    wait = self._heap[0][_DUE] - time.monotonic()
                    if wait <= 0:
                        entry = heapq.heappop(self._heap)
                        job, every = entry[_JOB], entry[_EVERY]  # under the lock: remove() clears the job
                        break
                    self._cond.wait(min(wait, _MIN_BEAT_S))
            try:
                alive = bool(job.heartbeat())
                if alive:
                    entry[_RENEWED] = time.monotonic()
                else:
                    entry[_REFUSED] = True
            except StoreClosed:  # nothing can land any more: no beats either
                alive = False
            except Exception:  # a transient database error: try again next beat
                alive = True
            if alive and entry[_LIVE]:
                entry[_DUE] = time.monotonic() + every
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


#: Called once per settle tried again after a transient error (the Worker counts them).
OnRetry = Callable[[], None]


def _may_hold(job: JobHandle, beat: list[Any] | None) -> bool:
    """Whether ``job``'s lease may still hold: no heartbeat was refused and
    the last one that landed (or the claim) is less than a lease ago."""
    if beat is None or beat[_REFUSED]:
        return False
    renewed: float = beat[_RENEWED]
    return time.monotonic() - renewed < job._lease_s


def _land(
    what: str, op: Callable[[], bool], job: JobHandle, beat: list[Any] | None, on_retry: OnRetry | None
) -> bool:
    """Runs the settling ``op``, again after each transient error while the
    lease may hold; False once it cannot hold any more (the job is lost)."""
    pause = _SETTLE_PAUSE_S
    tries = 0
    while True:
        try:
            landed = op()
        except DatabaseError as exc:
            if not exc.transient:
                raise
            if not _may_hold(job, beat):
                log.error(
                    "job %d of %r: the %s failed (%s) until its lease could no longer hold; "
                    "it will run again once the lease lapses",
                    job.id,
                    job.queue,
                    what,
                    exc,
                )
                return False
            tries += 1
            if tries == 1:
                log.warning(
                    "job %d of %r: the %s failed for now (%s); trying again while its lease holds",
                    job.id,
                    job.queue,
                    what,
                    exc,
                )
            if on_retry is not None:
                on_retry()
            time.sleep(pause)
            pause = min(pause * 2, _SETTLE_PAUSE_MAX_S)
            continue
        if tries:
            log.info("job %d of %r: the %s landed after %d more tries", job.id, job.queue, what, tries)
        return landed


def settle(
    job: JobHandle,
    error: BaseException | None,
    ack: Ack | None = None,
    beat: list[Any] | None = None,
    on_retry: OnRetry | None = None,
) -> Outcome:
    """Records the outcome of running ``job``: ack, fail or retry. ``beat``,
    the job's heartbeat entry (still beating), lets a transient failure be
    tried again while the lease may hold."""
    outcome: Outcome
    if error is None:
        landed = None if ack is None else ack(job)
        if landed is None:
            landed = _land("ack", job.ack, job, beat, on_retry)
        outcome = "acked"
    elif isinstance(error, Fail):
        message = str(error)
        landed, outcome = _land("fail", lambda: job.fail(message), job, beat, on_retry), "failed"
    else:
        message = repr(error)
        landed, outcome = _land("retry", lambda: job.retry(message), job, beat, on_retry), "retried"
    if landed:
        return outcome
    # Nothing left to settle: the code did it through this handle (its
    # outcome counts), or the lease lapsed or the job was cancelled (lost).
    # (A handler's op inside a transaction that then rolled back still
    # reads as settled; our own op lands in that case unless the lease
    # lapsed too.)
    return _SETTLED.get(job._settled, "lost")


def run_sync(
    job: JobHandle, fn: Callable[[JobHandle], Any], ack: Ack | None = None, on_retry: OnRetry | None = None
) -> Outcome:
    """Runs ``fn(job)`` with heartbeats and settles the job by its outcome
    (a return acks through ``ack`` when given); the heartbeats go on until
    the outcome landed."""
    # heartbeating() spelled out: this runs once per job on the Worker's hot path.
    entry = _BEATS.add(job, _beat_interval(job))
    try:
        try:
            fn(job)
        except Exception as exc:
            error: BaseException | None = exc
        else:
            error = None
        return settle(job, error, ack, entry, on_retry)
    finally:
        _BEATS.remove(entry)


async def run_async(
    job: JobHandle, fn: Callable[[JobHandle], Awaitable[Any]], on_retry: OnRetry | None = None
) -> Outcome:
    """The asyncio twin of :func:`run_sync`; database calls leave the loop free.

    Cancelled while ``fn`` runs, it gives the job back (pending at once,
    attempt refunded) before re-raising: nobody would settle it otherwise,
    and it would sit leased to nobody until the lease lapsed.
    """
    loop = asyncio.get_running_loop()
    entry = _BEATS.add(job, _beat_interval(job))
    try:
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
        return await loop.run_in_executor(None, settle, job, error, None, entry, on_retry)
    finally:
        _BEATS.remove(entry)
