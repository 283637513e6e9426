"""Shared pieces of the scheduler tests: a runner on a thread and polling waits."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

import alkstore


def wait_until(pred: Callable[[], bool], timeout: float = 20, what: str = "condition") -> None:
    """Polls `pred` every 20 ms; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def pending(store: alkstore.Store, queue: str) -> int:
    """Unclaimed jobs of `queue`. Scheduled ones count too: a job fired by a
    handle whose clock runs ahead is ready only in that handle's future."""
    s = store.queue(queue).stats()
    return s.pending + s.scheduled


def next_fire(store: alkstore.Store, name: str) -> int:
    """The schedule's next fire as Unix seconds."""
    (s,) = [s for s in store.schedules() if s.name == name]
    return int(s.next_fire_at.timestamp())


class Runner:
    """`store.run_schedules(stop)` on a thread; `error` holds what it raised."""

    def __init__(self, store: alkstore.Store) -> None:
        self.store = store
        self.stop = alkstore.StopToken()
        self.error: BaseException | None = None
        self.returned = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.store.run_schedules(self.stop)
            self.returned = True
        except BaseException as exc:  # handed to the test
            self.error = exc

    def start(self) -> Runner:
        self.thread.start()
        return self

    def finish(self, timeout: float = 30) -> None:
        """Sets stop and waits for the thread; re-raises what the runner raised."""
        self.stop.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "runner did not stop"
        if self.error is not None:
            raise self.error

    def __enter__(self) -> Runner:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop.stop()
        self.thread.join(30)
