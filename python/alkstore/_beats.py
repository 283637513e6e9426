"""The process's heartbeat timetable: one thread renews every registered
lease when it falls due, fires one-shot alarms (a task's timeout), and
sleeps while nothing is registered.

Starting and joining a thread per job cost more CPU than the job's own claim
and ack, hence one thread serving every running job from a heap. A heartbeat
that is refused ends that job's beats; when the job's row is gone (another
party cancelled it) the entry's ``on_gone`` callback tells the runner, which
marks the handle and cancels an ``async def`` handler (SPEC §22).
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from alkstore._core import JobHandle
from alkstore._errors import StoreClosed

__all__ = ["BEATS", "Entry", "beat_interval", "may_hold"]

#: Never heartbeat more often than this, whatever the lease.
MIN_BEAT_S = 1.0

# The slots of a timetable entry (a list, so the heap orders entries by due
# time, then by sequence number). _RENEWED: when the lease was last known to
# hold (the claim, then each heartbeat that landed); _REFUSED: a heartbeat
# said it no longer does. An alarm has no job: its _ON_DUE runs once.
_DUE, _SEQ, _JOB, _EVERY, _LIVE, _RENEWED, _REFUSED, _ON_GONE, _ON_DUE = range(9)

#: One entry of the timetable (see the slots above).
Entry = list[Any]


def beat_interval(job: JobHandle) -> float:
    """A third of the job's lease, at least :data:`MIN_BEAT_S`."""
    return max(MIN_BEAT_S, job._lease_s / 3)


def may_hold(job: JobHandle, beat: Entry | None) -> bool:
    """Whether ``job``'s lease may still hold: no heartbeat was refused and
    the last one that landed (or the claim) is less than a lease ago."""
    if beat is None or beat[_REFUSED]:
        return False
    renewed: float = beat[_RENEWED]
    return time.monotonic() - renewed < job._lease_s


class _Beats:
    def __init__(self) -> None:
        # Critical sections enter the lock itself: a Condition's
        # __enter__/__exit__ are Python calls, and add/remove run per job.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._heap: list[Entry] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._dead = 0
        # The thread sleeps with no timeout only when parked (nothing was
        # registered for a whole MIN_BEAT_S); else it looks at least every
        # MIN_BEAT_S, which is never later than a new entry falls due.
        self._parked = False

    def reset_in_child(self) -> None:
        """After fork: the parent's jobs are not the child's to keep alive,
        its thread did not come along, and its lock may have been held."""
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._heap = []
        self._thread = None
        self._dead = 0
        self._parked = False

    def add(self, job: JobHandle, every: float, on_gone: Callable[[], object] | None = None) -> Entry:
        """Renews ``job``'s lease every ``every`` seconds until removed;
        ``on_gone`` runs (on the timetable's thread) if the job's row is
        found gone after a refused heartbeat."""
        now = time.monotonic()
        return self._push([now + every, next(self._seq), job, every, True, now, False, on_gone, None], every)

    def alarm(self, after: float, on_due: Callable[[], object]) -> Entry:
        """Runs ``on_due`` once on the timetable's thread after ``after``
        seconds, unless removed first."""
        return self._push(
            [time.monotonic() + after, next(self._seq), None, 0.0, True, 0.0, False, None, on_due], after
        )

    def _push(self, entry: Entry, after: float) -> Entry:
        with self._lock:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="alkstore-heartbeat", daemon=True)
                self._thread.start()
            elif self._parked or after < MIN_BEAT_S:
                # Waking the thread for every short job handed it the GIL
                # twice per job (a third of a busy Worker's CPU); a thread
                # that is not parked wakes in time by itself.
                self._parked = False
                self._cond.notify()
        return entry

    def remove(self, entry: Entry) -> None:
        # A beat already on its way only renews a lease the outcome ends.
        with self._lock:
            entry[_LIVE] = False
            entry[_JOB] = None  # a dead entry may wait long for compaction: not with the job
            entry[_ON_GONE] = entry[_ON_DUE] = None
            self._dead += 1
            # Dead entries wait for their due time to be dropped; at thousands
            # of short jobs a second that is a heap mostly of the dead.
            if self._dead > 1024 and self._dead * 2 > len(self._heap):
                self._heap = [e for e in self._heap if e[_LIVE]]
                heapq.heapify(self._heap)
                self._dead = 0

    def _next_due(self) -> tuple[Entry, JobHandle | None, Callable[[], object] | None]:
        """Waits for the next live entry to fall due and takes it off the heap."""
        idle = False  # the last look found nothing registered
        with self._lock:
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
                        self._cond.wait(MIN_BEAT_S)
                    idle = not idle
                    continue
                idle = False
                wait = self._heap[0][_DUE] - time.monotonic()
                if wait <= 0:
                    entry = heapq.heappop(self._heap)
                    # Under the lock: remove() clears these.
                    return entry, entry[_JOB], entry[_ON_DUE]
                self._cond.wait(min(wait, MIN_BEAT_S))

    def _run(self) -> None:
        while True:
            entry, job, on_due = self._next_due()
            if on_due is not None:
                on_due()
                continue
            assert job is not None
            try:
                alive = bool(job.heartbeat())
            except StoreClosed:  # nothing can land any more: no beats either
                alive = False
            except Exception:  # a transient database error: try again next beat
                alive = True
            else:
                if alive:
                    entry[_RENEWED] = time.monotonic()
                else:
                    entry[_REFUSED] = True
                    self._refused(entry, job)
            if alive and entry[_LIVE]:
                entry[_DUE] = time.monotonic() + entry[_EVERY]
                with self._lock:
                    heapq.heappush(self._heap, entry)

    @staticmethod
    def _refused(entry: Entry, job: JobHandle) -> None:
        """A refused heartbeat: the lease lapsed, the job was settled through
        its handle, or another party cancelled it (its row is gone)."""
        on_gone = entry[_ON_GONE]
        if on_gone is None or job._settled is not None:
            return
        if time.monotonic() - entry[_RENEWED] >= job._lease_s:
            return  # lapsed: another worker may have run and acked it since
        try:
            gone = job._gone()
        except Exception:  # the database is away: the lease will lapse instead
            return
        if gone and entry[_LIVE]:
            on_gone()


BEATS = _Beats()
os.register_at_fork(after_in_child=BEATS.reset_in_child)
