"""Ctrl-C for the commands that change rows page by page (``requeue``, ``purge``, ``cancel``).

Each page is one call, so one transaction: it commits or rolls back whole. A
KeyboardInterrupt raised inside a call could leave the command not knowing which
of the two happened, and then it could not say what it did. So the first Ctrl-C
only asks to stop: the page in flight finishes, is counted, and the command stops
before the next one. A second Ctrl-C raises KeyboardInterrupt as soon as Python
runs the handler (a statement waiting on a lock delays both); the command then
says that the page in flight, if any, took effect whole or not at all."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

__all__ = ["DEFAULT_PAGE", "StopRequest", "chunks", "progress", "stop_on_ctrl_c", "unique"]

#: Rows per call: the core's most per call, so each transaction stays short.
DEFAULT_PAGE = 1000


class StopRequest:
    """Whether Ctrl-C has asked the command to stop after the page in flight."""

    def __init__(self) -> None:
        self.requested = False

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        # No printing here: the handler can run in the middle of a progress
        # line's write to stderr, and a nested write raises RuntimeError.
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True


@contextmanager
def stop_on_ctrl_c() -> Iterator[StopRequest]:
    """Defers the first SIGINT to a page boundary while the block runs."""
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        # Only the main thread can set a handler; elsewhere Ctrl-C is the caller's.
        yield stop
        return
    previous = signal.signal(signal.SIGINT, stop._on_sigint)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def chunks(ids: Sequence[int], size: int) -> Iterator[list[int]]:
    """``ids`` in pieces of at most ``size``, in order."""
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def progress(line: str) -> None:
    """One progress line on stderr, so stdout keeps only the result."""
    print(line, file=sys.stderr, flush=True)


def unique(ids: Sequence[int]) -> list[int]:
    """``ids`` without repeats, first occurrence kept: a repeat is one job."""
    return list(dict.fromkeys(ids))
