"""The process's heartbeat timetable (``alkstore._runner``, ADR 0022): one
thread renews every registered lease when due, stops at removal or refusal,
and a forked child starts clean. The Worker-level proof (slow handlers keep
their leases) is in test_worker.py."""

from __future__ import annotations

import os
import threading
import time
from typing import cast

import pytest

from alkstore import JobHandle
from alkstore._runner import _BEATS


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
