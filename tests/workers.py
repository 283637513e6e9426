"""Running an `alkstore.Worker` on a thread for the length of a test block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from alkstore import StopToken, Worker
from tests.scheduling import wait_until as wait_for

__all__ = ["running", "wait_for"]


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
