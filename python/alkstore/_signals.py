"""SIGTERM / SIGINT for the duration of ``Worker.run``.

Python delivers signals to the main thread only, so handlers are installed
only when ``run`` is called from it (a worker run on another thread is
stopped through its ``stop`` token). The previous handlers are put back on
the way out, whatever happens.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["SHUTDOWN_SIGNALS", "handling"]

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def handling(on_signal: Callable[[int], None]) -> Iterator[bool]:
    """Routes SIGTERM and SIGINT to ``on_signal(signum)`` inside the block.

    Yields whether the handlers were installed (False off the main thread).
    """
    if threading.current_thread() is not threading.main_thread():
        yield False
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        on_signal(signum)

    previous = {sig: signal.getsignal(sig) for sig in SHUTDOWN_SIGNALS}
    try:
        for sig in SHUTDOWN_SIGNALS:
            signal.signal(sig, handler)
        yield True
    finally:
        for sig, old in previous.items():
            # getsignal() gives None for a handler not installed from Python;
            # SIG_DFL is the closest we can put back.
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
