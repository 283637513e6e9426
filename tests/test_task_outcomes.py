"""What a task or handler may decide about its job (SPEC §22), on both engines:
``Retry`` with its own delay (the attempt counts), ``Snooze`` (it does not), a
timeout (an ``async def`` task is cancelled; a sync task's outcome is
discarded), and cancelling a job that is running.

Waits are on what the code reports (worker counts, a handler's event), never
on sleeps; the clock is moved with ``store._advance_clock``.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import alkstore
from alkstore import JobHandle, Store, Tasks, Worker
from tests.workers import running, wait_for


def test_retry_after_counts_the_attempt_with_that_delay(store: Store) -> None:
    tasks = Tasks(store)

    @tasks.task(queue="q", max_attempts=3)
    def limited() -> None:
        raise alkstore.Retry(after=3600, error="rate limited")

    job_id = limited.enqueue()
    worker = tasks.worker(concurrency=1)
    before = time.time()
    with running(worker):
        wait_for(lambda: worker.counts.retried == 1)
    job = store.queue("q").get_job(job_id)
    assert job is not None and (job.state, job.attempts) == ("pending", 1), "the attempt counted"
    waits = job.run_at.timestamp() - before
    assert 3600 - 5 <= waits <= 3600 + 5, f"ready an hour on, not on the curve: {waits}"


def test_retry_on_the_last_attempt_goes_dead_with_its_error(store: Store) -> None:
    worker = Worker(store, concurrency=1)
    q = store.queue("q", max_attempts=1)
    job_id = q.enqueue({})

    @worker.handler("q")
    def handle(_payload: object, _job: JobHandle) -> None:
        raise alkstore.Retry(after=10, error="upstream down")

    with running(worker):
        wait_for(lambda: worker.counts.dead == 1)
    dead = q.get_job(job_id)
    assert dead is not None and (dead.state, dead.last_error) == ("dead", "upstream down")


def test_snooze_puts_the_job_off_without_counting_the_attempt(store: Store) -> None:
    worker = Worker(store, concurrency=1)
    q = store.queue("q", max_attempts=1)
    job_id = q.enqueue({})
    runs: list[int] = []

    @worker.handler("q")
    def handle(_payload: object, job: JobHandle) -> None:
        runs.append(job.attempts)
        if len(runs) < 3:
            raise alkstore.Snooze(60)

    with running(worker):
        wait_for(lambda: worker.counts.snoozed == 1)
        job = q.get_job(job_id)
        assert job is not None and (job.state, job.attempts) == ("pending", 0), "snoozed, attempt refunded"
        store._advance_clock(61)
        wait_for(lambda: worker.counts.snoozed == 2)
        store._advance_clock(61)
        wait_for(lambda: worker.counts.acked == 1)
    assert runs == [1, 1, 1], "max_attempts=1, yet it ran three times: snoozes are not attempts"
    assert q.get_job(job_id) is None


def test_retry_and_snooze_check_their_arguments() -> None:
    with pytest.raises(ValueError, match="after"):
        alkstore.Retry(after=-1)
    with pytest.raises(TypeError, match="error must be a str"):
        alkstore.Retry(error=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seconds"):
        alkstore.Snooze(float("inf"))
    assert alkstore.Retry(after=1.2).after == 2, "whole seconds, rounded up"
    assert repr(alkstore.Snooze(5)) == "Snooze(5)"


def test_an_async_task_past_its_timeout_is_cancelled_and_retried(store: Store) -> None:
    tasks = Tasks(store)
    cancelled = threading.Event()

    @tasks.task(queue="q", timeout=0.5, max_attempts=3)
    async def slow() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    job_id = slow.enqueue()
    worker = tasks.worker(concurrency=1)
    with running(worker):
        wait_for(lambda: worker.counts.retried == 1)
    assert cancelled.is_set(), "the coroutine was cancelled at the timeout"
    job = store.queue("q").get_job(job_id)
    assert job is not None and (job.state, job.attempts) == ("pending", 1)
    store._advance_clock(3600)
    again = store.queue("q").claim("w")
    assert again is not None and again.id == job_id


def test_a_sync_task_past_its_timeout_is_retried_and_its_late_outcome_lands_nowhere(store: Store) -> None:
    tasks = Tasks(store)
    release = threading.Event()
    finished = threading.Event()
    flags: list[bool] = []

    @tasks.task(queue="q", timeout=1.0, max_attempts=1)
    def stuck() -> None:
        release.wait(60)
        flags.append(alkstore.current_job().cancel_requested)
        finished.set()

    @tasks.task(queue="q")
    def quick() -> None: ...

    job_id = stuck.enqueue()
    worker = tasks.worker(concurrency=1)
    with running(worker):
        wait_for(lambda: worker.counts.dead == 1)  # max_attempts=1: the timeout's retry went dead
        job = store.queue("q").get_job(job_id)
        assert job is not None and job.state == "dead" and job.last_error == "timed out after 1 s"
        # Its slot is free while its thread runs on: another job runs meanwhile.
        quick.enqueue()
        wait_for(lambda: worker.counts.acked == 1)
        release.set()
        assert finished.wait(30)
    assert flags == [True], "the timed-out code could see it should stop"
    assert worker.counts.acked == 1 and worker.counts.lost == 0, worker.counts


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_cancelling_a_running_job_reaches_the_worker_within_a_heartbeat(store: Store, kind: str) -> None:
    # A 6-second lease: heartbeats (and so the news of a cancel) every 2 s.
    worker = Worker(store, concurrency=1)
    q = store.queue("q", visibility_timeout_s=6)
    job_id = q.enqueue({})
    started, stopped = threading.Event(), threading.Event()

    if kind == "async":

        @worker.handler("q")
        async def handle_async(_payload: object, _job: JobHandle) -> None:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                stopped.set()
                raise

    else:

        @worker.handler("q")
        def handle_sync(_payload: object, job: JobHandle) -> None:
            started.set()
            deadline = time.monotonic() + 60
            while not job.cancel_requested and time.monotonic() < deadline:
                time.sleep(0.05)  # the handler's own work loop, looking at the flag
            if job.cancel_requested:
                stopped.set()

    with running(worker):
        assert started.wait(30)
        t0 = time.monotonic()
        assert q.cancel(job_id)
        assert stopped.wait(30)
        took = time.monotonic() - t0
        wait_for(lambda: worker.counts.cancelled == 1)
    assert took < 6, f"learned at a heartbeat (every 2 s), before the lease could lapse: {took:.1f}s"
    assert q.get_job(job_id) is None and q.stats().pending == 0, "cancelled, never retried"
    counts = worker.counts
    assert (counts.retried, counts.lost, counts.acked) == (0, 0, 0), counts


def test_a_job_that_finishes_before_the_cancel_lands_completes_normally(store: Store) -> None:
    worker = Worker(store, concurrency=1)
    q = store.queue("q")
    job_id = q.enqueue({})

    @worker.handler("q")
    def handle(_payload: object, _job: JobHandle) -> None: ...

    with running(worker):
        wait_for(lambda: worker.counts.acked == 1)
    assert not q.cancel(job_id), "nothing left to cancel"
    assert worker.counts.cancelled == 0
