"""The asyncio bridge: run one blocking alkstore wait on its own thread.

The wait itself runs in Rust with the GIL released; this module only hands
its result to the event loop, so the loop keeps running while a claim waits.
Each call gets its own thread (a shared executor would cap concurrent waits at
its pool size) and its own cancel token, set when the awaiting task is
cancelled so the thread ends promptly instead of waiting out its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from alkstore._core import StopToken

T = TypeVar("T")

__all__ = ["run_blocking"]


def _settle(fut: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """Awaits ``fn(*args, cancel)`` run on a fresh thread."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()
    cancel = StopToken()

    def work() -> None:
        try:
            result = fn(*args, cancel)
        except BaseException as exc:  # handed to the awaiting task, never lost
            outcome: tuple[bool, Any] = (False, exc)
        else:
            outcome = (True, result)
        # A RuntimeError means the loop closed while we waited: nobody is left to tell.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, fut, *outcome)

    threading.Thread(target=work, name="alkstore-await", daemon=True).start()
    try:
        return await fut
    finally:
        cancel.stop()
