"""Running an `alkstore.Worker` on a thread for the length of a test block, and a waiting claimer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from alkstore import JobHandle, StopToken, Worker
from tests.conftest import Target
from tests.scheduling import wait_until as wait_for

__all__ = ["claimed_after", "running", "wait_for"]


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


def claimed_after(target: Target, queue: str, commit: Callable[[], int]) -> tuple[JobHandle | None, int]:
    """Waits on ``queue`` in another store handle, with a 30 s poll interval so
    only a wake can explain a prompt claim, while ``commit`` (run after the
    waiter is in place) enqueues and commits one job and returns its id."""
    waiting = target.open(poll_interval_s=30.0)
    q = waiting.queue(queue)
    got: list[JobHandle | None] = []
    t = threading.Thread(target=lambda: got.append(q.claim("w", timeout=20)))
    t.start()
    time.sleep(0.5)
    try:
        job_id = commit()
    finally:
        t.join(timeout=25)
        waiting.close()
    return (got[0] if got else None), job_id
