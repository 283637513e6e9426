"""Completion counts for the dashboard's chart (SPEC §19, ADR 0020) through
the Python API, on both engines: what a Worker acks is counted per queue and
minute, and another process's counts arrive while it runs, without closing.

The rules (what counts, transactions, the window, the day kept) are in the
Rust conformance suite (`completions` cases).
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

import alkstore
from tests.conftest import Target
from tests.processes import HELPERS
from tests.workers import running, wait_for


def totals(store: alkstore.Store) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in store.completions():
        out[c.queue] = out.get(c.queue, 0) + c.count
    return out


def test_a_workers_acks_are_counted_per_queue_and_minute(store: alkstore.Store) -> None:
    emails, reports = store.queue("emails"), store.queue("reports")
    emails.enqueue_many([{"n": i} for i in range(5)])
    reports.enqueue({"n": 0})
    worker = alkstore.Worker(store, concurrency=2)

    def handle(payload: dict[str, int], job: alkstore.JobHandle) -> None:
        if payload["n"] == 4:
            raise alkstore.Fail("not a completion")

    worker.handler("emails")(handle)
    worker.handler("reports")(handle)
    with running(worker):
        wait_for(lambda: worker.counts.acked == 5 and worker.counts.dead == 1, what="six outcomes")

    rows = store.completions()
    assert {(c.queue, c.count) for c in rows} == {("emails", 4), ("reports", 1)}
    now = datetime.now(UTC)
    for c in rows:
        assert c.minute.tzinfo is not None and c.minute.second == 0
        assert abs(c.minute - now) < timedelta(minutes=2), "the minute of the database's clock"
    assert "CompletionCount(queue=" in repr(rows[0])


def test_the_window_is_checked(store: alkstore.Store) -> None:
    for bad in (0, 1441):
        with pytest.raises(ValueError, match="minutes must be between 1 and 1440"):
            store.completions(bad)
    assert store.completions(1440) == []


def test_another_process_counts_arrive_while_it_runs(store: alkstore.Store, target: Target) -> None:
    q = store.queue("q")
    q.enqueue_many([{"n": i} for i in range(7)])
    with subprocess.Popen(
        [sys.executable, str(HELPERS / "acker.py"), *target.argv(), "q", "7"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            assert child.stdout.readline().strip() == "acked"
            # The child's flusher writes within a few seconds; its store stays open.
            deadline = time.monotonic() + 30
            while totals(store).get("q", 0) < 7 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert totals(store) == {"q": 7}
            assert child.poll() is None, "counted while the other process still runs"
        finally:
            child.stdin.close()
        assert child.wait(timeout=30) == 0
    assert totals(store) == {"q": 7}, "closing writes nothing twice"
