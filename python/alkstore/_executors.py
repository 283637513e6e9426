"""Where a Worker runs handlers: daemon threads for sync ones, one asyncio
event loop on its own thread for async ones.

Both hand back a :class:`Pending`: a ``concurrent.futures.Future`` from the
loop, and from the pool a :class:`Call`, which does the part of a Future the
Worker uses without building a Future's Condition (an RLock) per job, so the
Worker tracks every in-flight job the same way. The threads are daemons on purpose: a
handler stuck past the shutdown grace has had its job released already, and
must not keep the process from exiting (``ThreadPoolExecutor`` joins its
threads at interpreter exit).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import CancelledError, Future
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Call", "Escaped", "LoopThread", "Pending", "ThreadPool"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
log = logging.getLogger("alkstore.worker")


class Pending(Protocol[T_co]):
    """What the Worker needs of a submitted job: both executors' results have it."""

    def result(self) -> T_co: ...
    def cancel(self) -> bool: ...
    def add_done_callback(self, fn: Callable[[Any], object]) -> None: ...


_PENDING, _RUNNING, _FINISHED, _CANCELLED = range(4)


def _ran() -> Any:
    """What a :class:`Call` keeps in place of its function once it ran."""
    raise RuntimeError("a Call runs once")


class Call(Generic[T]):
    """One call on a :class:`ThreadPool`: run once, cancel before it starts,
    one done callback, ``result()`` once done (raising what the call raised,
    or ``CancelledError``)."""

    __slots__ = ("_abandoned", "_callback", "_error", "_fn", "_lock", "_state", "_value")

    def __init__(self, fn: Callable[[], T], lock: threading.Lock | None = None) -> None:
        self._fn = fn
        # Its pool's lock, shared by every call on it (the sections it guards
        # are a few assignments): not one lock made per job.
        self._lock = threading.Lock() if lock is None else lock
        self._state = _PENDING
        self._value: T | None = None
        self._error: BaseException | None = None
        self._callback: Callable[[Call[T]], object] | None = None
        self._abandoned = False

    def run(self) -> bool:
        """On a pool thread: calls the function unless cancelled first.
        Returns whether the call was abandoned while it ran."""
        with self._lock:
            if self._state != _PENDING:
                return False
            self._state = _RUNNING
        try:
            self._value = self._fn()
        except BaseException as exc:  # handed to result(), never lost
            self._error = exc
        # The function and the callback usually hold what holds this call (the
        # Worker's in-flight record): dropped once used, no cycle is left for
        # the garbage collector, which otherwise ran for every few hundred jobs.
        self._fn = _ran
        with self._lock:
            self._state = _FINISHED
            callback, self._callback = self._callback, None
            abandoned = self._abandoned
        self._finish(callback)
        return abandoned

    def abandon(self) -> bool:
        """Marks a running call as one nobody waits for any more (its job
        timed out); False when it is not running."""
        with self._lock:
            if self._state != _RUNNING:
                return False
            self._abandoned = True
            return True

    def cancel(self) -> bool:
        """Stops a call that has not started; False once it runs or ran."""
        with self._lock:
            if self._state in (_RUNNING, _FINISHED):
                return False
            if self._state == _CANCELLED:
                return True
            self._state = _CANCELLED
            callback, self._callback = self._callback, None
        self._fn = _ran
        self._finish(callback)
        return True

    def add_done_callback(self, fn: Callable[[Call[T]], object]) -> None:
        """Calls ``fn(self)`` when done, or now if already done (one callback)."""
        with self._lock:
            if self._state in (_PENDING, _RUNNING):
                assert self._callback is None, "one done callback per call"
                self._callback = fn
                return
        self._finish(fn)

    def result(self) -> T:
        if self._state == _CANCELLED:
            raise CancelledError
        if self._state != _FINISHED:
            raise RuntimeError("the call has not finished")
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def _finish(self, callback: Callable[[Call[T]], object] | None) -> None:
        if callback is None:
            return
        try:
            callback(self)
        except Exception:  # as a Future does: a callback's error must not kill the pool thread
            log.exception("a Worker done-callback raised")


#: How long shutdown waits for the event loop thread to wind down.
_LOOP_JOIN_S = 2.0


class ThreadPool:
    """At most ``size`` daemon threads, started as work arrives."""

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._work: queue.SimpleQueue[Call[Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._calls = threading.Lock()  # every Call's (see Call.__init__)
        # Per pool thread: ``serving``, and ``call``, the one handed to it to run next (``submit``).
        self._mine = threading.local()
        self._threads = 0
        self._idle = 0

    def submit(self, fn: Callable[[], T], here: bool = False) -> Call[T]:
        """Runs ``fn`` on a pool thread; its result or exception lands in the call.

        ``here``: submitted by a call running on one of this pool's threads
        (a finished job's hand-off to the next, ``alkstore._dispatch``), it
        runs on that thread once the current call returns, not through the
        shared queue: that thread is awake, and waking another one to take
        it cost a GIL hand-over and a wasted wake-up per job."""
        call = Call(fn, self._calls)
        mine = self._mine
        if here and getattr(mine, "serving", False) and mine.call is None:
            mine.call = call
            return call
        self._share(call)
        return call

    def _share(self, call: Call[Any]) -> None:
        """Puts ``call`` on the shared queue, starting a thread if none waits."""
        with self._lock:
            grow = self._idle == 0 and self._threads < self._size
            if grow:
                self._threads += 1
            else:
                self._idle -= 1  # a waiting thread takes this item
        if grow:
            threading.Thread(target=self._serve, name=f"{self._name}-{self._threads}", daemon=True).start()
        self._work.put(call)

    def abandon(self, call: Call[Any]) -> None:
        """``call`` runs on past its job's timeout and nobody waits for it:
        one more thread may serve meanwhile, and the abandoned one ends with
        its call."""
        if call.abandon():
            with self._lock:
                self._size += 1

    def _serve(self) -> None:
        mine = self._mine
        mine.serving = True
        mine.call = None
        while True:
            item: Call[Any] | None = mine.call
            if item is None:
                item = self._work.get()
                if item is None:
                    return
            else:
                mine.call = None  # handed here by the call before it: this thread never idled
            if item.run():
                with self._lock:  # an abandoned call: its extra place goes with its thread
                    self._size -= 1
                    self._threads -= 1
                handed, mine.call = mine.call, None
                if handed is not None:  # not expected of an abandoned call, but never dropped
                    self._share(handed)
                return
            if mine.call is None:
                with self._lock:
                    self._idle += 1

    def shutdown(self) -> None:
        """Ends idle threads now and busy ones after their current item; never waits."""
        with self._lock:
            n = self._threads
        for _ in range(n):
            self._work.put(None)


class Escaped(Exception):
    """A ``SystemExit`` or ``KeyboardInterrupt`` raised by a coroutine on a
    :class:`LoopThread`, carried to its future as an ordinary exception."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


async def _contained(coro: Coroutine[Any, Any, T]) -> T:
    try:
        return await coro
    except (SystemExit, KeyboardInterrupt) as exc:
        # Left to escape a task, asyncio re-raises these out of run_forever:
        # the loop thread dies and every job on it stays in flight forever.
        raise Escaped(exc) from exc


class LoopThread:
    """One asyncio event loop running forever on a daemon thread."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            # Stopped by shutdown: let cancelled tasks run their cleanup.
            tasks = asyncio.all_tasks(loop)
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedules ``coro`` on the loop; cancelling the future cancels the task.

        A ``SystemExit`` / ``KeyboardInterrupt`` it raises reaches the future
        as :class:`Escaped`; the loop goes on.
        """
        return asyncio.run_coroutine_threadsafe(_contained(coro), self._loop)

    def shutdown(self) -> None:
        """Cancels what still runs, stops the loop and waits a little for it."""

        def stop() -> None:
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            self._loop.stop()

        try:
            self._loop.call_soon_threadsafe(stop)
        except RuntimeError:
            return  # already closed
        self._thread.join(_LOOP_JOIN_S)
