"""The process's heartbeat timetable (``alkstore._beats``, ADR 0022): one
thread renews every registered lease when due, stops at removal or refusal,
and a forked child starts clean. The Worker-level proof (slow handlers keep
their leases) is in test_worker.py."""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import cast

import pytest

from alkstore import JobHandle
from alkstore._beats import BEATS as _BEATS

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer


class Beaten:
    """Stands in for a JobHandle: counts heartbeats, refuses after `refuse_after`."""

    def __init__(self, refuse_after: int | None = None) -> None:
        self.beats = 0
        self.refuse_after = refuse_after

    def heartbeat(self) -> bool:
        self.beats += 1
        return self.refuse_after is None or self.beats < self.refuse_after


def add(job: Beaten, every: float) -> list[object]:
    return _BEATS.add(cast(JobHandle, job), every)


def test_each_job_is_beaten_at_its_interval_until_removed_or_refused() -> None:
    fast, slow, refused = Beaten(), Beaten(), Beaten(refuse_after=2)
    entries = [add(fast, 0.05), add(slow, 0.25), add(refused, 0.05)]
    time.sleep(0.6)
    _BEATS.remove(entries[0])
    seen = fast.beats
    time.sleep(0.3)
    _BEATS.remove(entries[1])
    _BEATS.remove(entries[2])
    # Bounds loose below for a loaded machine; above, beats cannot come faster.
    assert 3 <= seen <= 13, f"every 50 ms for 0.6 s: {seen}"
    assert fast.beats <= seen + 1, "no beats after removal (one may have been on its way)"
    assert 1 <= slow.beats <= 4, f"every 250 ms for 0.9 s: {slow.beats}"
    assert refused.beats == 2, "a refused beat ends that job's beats"
    assert sum(t.name == "alkstore-heartbeat" for t in threading.enumerate()) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork exists only on POSIX")
def test_a_forked_child_starts_with_an_empty_timetable_and_its_own_thread() -> None:
    parent_job = Beaten()
    entry = add(parent_job, 30.0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running pytest's teardown
        try:
            clean = not _BEATS._heap
            mine = Beaten()
            add(mine, 0.05)
            time.sleep(0.3)
            os.write(w, f"{int(clean)} {mine.beats}".encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as out:
        empty, beats = out.read().split()
    os.waitpid(pid, 0)
    _BEATS.remove(entry)
    assert empty == "1", "the parent's jobs are not the child's"
    assert int(beats) >= 1, "the child's own job is beaten by the child's own thread"


def test_a_timetable_left_empty_parks_and_a_new_job_still_gets_its_beats() -> None:
    # Empty for a whole beat (1 s), the thread parks; add() must wake it.
    time.sleep(2.3)
    assert _BEATS._parked, "nothing registered for two beats: the thread sleeps until woken"
    job = Beaten()
    entry = add(job, 0.05)
    time.sleep(0.4)
    _BEATS.remove(entry)
    assert job.beats >= 2, f"every 50 ms for 0.4 s after parking: {job.beats}"


def test_short_jobs_do_not_wake_the_thread_one_by_one() -> None:
    # Waking it per job handed it the GIL twice per job. Thousands of short
    # jobs (more than the 1024 dead entries that trigger a compaction), each
    # registered and removed at once, with the thread free to run in between.
    _BEATS.remove(add(Beaten(), 30.0))  # wakes a parked thread: it now looks every beat
    time.sleep(0.05)
    cond = _BEATS._cond
    notified = 0
    real_notify = cond.notify

    def counting_notify(n: int = 1) -> None:
        nonlocal notified
        notified += 1
        real_notify(n)

    cond.notify = counting_notify  # type: ignore[method-assign]
    try:
        for _ in range(3000):
            _BEATS.remove(add(Beaten(), 30.0))
            time.sleep(0)
    finally:
        del cond.notify
    assert notified <= 1, f"a job due a beat later needs no wake: {notified} notifies"


def test_a_removed_entry_lets_go_of_its_job() -> None:
    # Dead entries wait in the heap until they reach the top or a compaction.
    job = Beaten()
    ref = weakref.ref(job)
    entry = add(job, 30.0)
    _BEATS.remove(entry)
    del job
    assert ref() is None, "the timetable keeps no finished job alive"
