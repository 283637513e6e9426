"""Running an `alkstore.Worker` on a thread for the length of a test block, and a waiting claimer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from alkstore import JobHandle, StopToken, Worker
from tests.conftest import Target
from tests.scheduling import wait_until as wait_for

__all__ = ["claimed_after", "running", "wait_for", "waiting_claim"]


@contextmanager
def running(worker: Worker, stop: StopToken | None = None) -> Iterator[StopToken]:
    """Runs the worker on a thread for the block; stops it and joins on exit."""
    token = stop or StopToken()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run(token)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    try:
        yield token
    finally:
        token.stop()
        t.join(30)
        assert not t.is_alive(), "Worker.run did not return after stop"
    if errors:
        raise errors[0]


@contextmanager
def waiting_claim(target: Target, queue: str) -> Iterator[Callable[[], JobHandle | None]]:
    """A claimer waiting on ``queue`` in another store handle, with a 30 s poll
    interval so only a wake can explain a prompt claim. The block commits a job;
    the function it gets joins the claimer and returns what it claimed."""
    waiting = target.open(poll_interval_s=30.0)
    got: list[JobHandle | None] = []
    t = threading.Thread(target=lambda: got.append(waiting.queue(queue).claim("w", timeout=20)))
    t.start()
    time.sleep(0.5)

    def claimed() -> JobHandle | None:
        t.join(timeout=25)
        return got[0] if got else None

    try:
        yield claimed
    finally:
        t.join(timeout=25)
        waiting.close()


def claimed_after(target: Target, queue: str, commit: Callable[[], int]) -> tuple[JobHandle | None, int]:
    """What a waiting claimer (:func:`waiting_claim`) got once ``commit`` enqueued
    and committed one job, and that job's id."""
    with waiting_claim(target, queue) as claimed:
        job_id = commit()
        return claimed(), job_id
