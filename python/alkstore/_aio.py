"""The asyncio bridge: run one blocking alkstore wait on its own thread.

The wait itself runs in Rust with the GIL released; this module only hands
its result to the event loop, so the loop keeps running while a claim waits.
Each call gets its own thread (a shared executor would cap concurrent waits at
its pool size) and its own cancel token, set when the awaiting task is
cancelled so the thread ends promptly instead of waiting out its timeout.

A claim is the caller's only once the caller has it. When the awaiting task
is cancelled (or its coroutine closed), whatever the thread claims or has
claimed goes to ``give_back`` — :func:`release` for jobs — instead of being
dropped: otherwise the job would stay leased to nobody until its lease
lapsed, and that reclaim would eat an attempt. A cancelled await returns
(re-raises) only once the thread has ended and that is done, so a task that
was cancelled holds nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from alkstore._core import JobHandle, StopToken

T = TypeVar("T")

__all__ = ["release", "run_blocking"]

log = logging.getLogger("alkstore")


def _settle(fut: asyncio.Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def release(got: object) -> None:
    """Gives back a claim nobody received: a ``JobHandle`` or a list of them."""
    jobs = got if isinstance(got, list) else [got]
    for job in jobs:
        if not isinstance(job, JobHandle):
            continue
        try:
            job.release()
        except Exception as exc:  # left to its lease, as any lost claim
            log.warning("could not give back job %d of %r: %s", job.id, job.queue, exc)


def _give_back_when_done(
    done: asyncio.Future[tuple[bool, Any]], give_back: Callable[[Any], None]
) -> asyncio.Future[None]:
    """Hands the thread's result, once there, to ``give_back`` (on a thread:
    it waits for the database). The returned future ends when that is done."""
    loop = done.get_loop()
    back: asyncio.Future[None] = loop.create_future()

    def on_done(_: asyncio.Future[tuple[bool, Any]]) -> None:
        ok, value = done.result()
        if not ok:
            back.set_result(None)
            return

        def run() -> None:
            try:
                give_back(value)
            finally:
                with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                    loop.call_soon_threadsafe(_settle, back, None)

        threading.Thread(target=run, name="alkstore-give-back", daemon=True).start()

    done.add_done_callback(on_done)
    return back


async def run_blocking(fn: Callable[..., T], *args: Any, give_back: Callable[[T], None] | None = None) -> T:
    """Awaits ``fn(*args, cancel)`` run on a fresh thread; see the module doc for ``give_back``."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[tuple[bool, Any]] = loop.create_future()
    cancel = StopToken()

    def work() -> None:
        try:
            outcome: tuple[bool, Any] = (True, fn(*args, cancel))
        except BaseException as exc:  # handed to the awaiting task, never lost
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(_settle, done, outcome)
        except RuntimeError:
            # The loop closed while we waited: nobody is left to take the result.
            if outcome[0] and give_back is not None:
                give_back(outcome[1])

    threading.Thread(target=work, name="alkstore-await", daemon=True).start()
    try:
        # Shielded: cancelling the task must not cancel `done`, which still
        # carries the thread's result to whoever gives it back.
        ok, value = await asyncio.shield(done)
    except BaseException as exc:
        cancel.stop()
        back = _give_back_when_done(done, give_back) if give_back is not None else done
        if isinstance(exc, asyncio.CancelledError):
            # A second cancellation ends this wait, not the giving back.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(back)
        raise
    if ok:
        return value  # type: ignore[no-any-return]
    raise value
