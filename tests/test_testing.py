"""``alkstore.testing``: draining a task registry in the test's own thread and
listing a task's pending calls (SPEC §22), on both engines."""

from __future__ import annotations

import asyncio

import pytest

import alkstore
from alkstore import Store, Tasks
from alkstore.testing import Call, DrainResult, drain, enqueued


def test_drain_runs_every_ready_job_and_what_the_jobs_enqueue(store: Store) -> None:
    tasks = Tasks(store)
    order: list[str] = []

    @tasks.task(queue="signup")
    def signup(email: str) -> None:
        order.append(f"signup {email}")
        welcome.enqueue(email)

    @tasks.task(queue="emails")
    async def welcome(email: str) -> None:
        await asyncio.sleep(0)
        order.append(f"welcome {email}")
        audit.enqueue(email)

    @tasks.task(queue="audit")
    def audit(email: str) -> None:
        order.append(f"audit {email}")

    signup.enqueue("ada@example.com")
    assert drain(tasks) == DrainResult(acked=3)
    assert order == ["signup ada@example.com", "welcome ada@example.com", "audit ada@example.com"]
    assert drain(tasks) == DrainResult(), "nothing left"


def test_drain_counts_each_outcome(store: Store) -> None:
    tasks = Tasks(store)

    @tasks.task(queue="q", max_attempts=2)
    def flaky(n: int) -> None:
        if n == 1:
            raise RuntimeError("boom")  # retried on the curve: not ready again at once
        if n == 2:
            raise alkstore.Fail("no")
        if n == 3:
            raise alkstore.Snooze(60)
        if n == 4:
            raise alkstore.Retry(after=0)  # ready again at once: runs again here, then dead

    for n in range(5):
        flaky.enqueue(n)
    result = drain(tasks, queue="q")
    assert result == DrainResult(acked=1, retried=2, dead=2, snoozed=1), result
    assert result.ran == 6


def test_enqueued_lists_a_tasks_pending_calls(store: Store) -> None:
    tasks = Tasks(store)

    @tasks.task(queue="q")
    def send(to: str, *, subject: str = "hi") -> None: ...

    @tasks.task(queue="q")
    def other() -> None: ...

    a = send.enqueue("ada", subject="welcome")
    other.enqueue()
    b = send.options(delay=600).enqueue("bob")
    assert enqueued(send) == [Call(("ada",), {"subject": "welcome"}, a), Call(("bob",), {}, b)]
    drain(tasks)
    assert enqueued(send) == [Call(("bob",), {}, b)], "the scheduled one is still pending"
    assert [c.job_id for c in enqueued(other)] == []


def test_drain_needs_a_store(store: Store) -> None:
    with pytest.raises(RuntimeError, match="no store yet"):
        drain(Tasks())
