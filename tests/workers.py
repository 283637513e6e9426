"""Running an `alkstore.Worker` on a thread for the length of a test block."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from alkstore import StopToken, Worker


def wait_for(cond: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


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
