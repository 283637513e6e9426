"""``alkstore.Worker``: run handlers for the jobs of one or more queues (SPEC §11).

```python
worker = alkstore.Worker(store, concurrency=4)

@worker.handler("emails")
def send_email(payload, job): ...        # return → ack; raise → retry; raise Fail → dead

worker.run()                             # until SIGTERM / SIGINT or stop
```

The claiming and draining machinery is in ``_dispatch``; running user code
(heartbeats, outcomes) in ``_runner``. This module holds the configuration
and the public surface.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from alkstore._core import _MAX_NAME_CHARS, Queue, StopToken, Store, _timeout, _validate_name
from alkstore._dispatch import Handler, Run
from alkstore._errors import StoreClosed
from alkstore._signals import handling
from alkstore._tally import Tally, WorkerCounts

if TYPE_CHECKING:
    from alkstore._otel import Telemetry

__all__ = ["Worker", "WorkerCounts"]

F = TypeVar("F", bound=Callable[..., Any])


def default_worker_id() -> str:
    """``"<hostname>-<pid>"``, the hostname cut so the id stays a valid name."""
    pid = str(os.getpid())
    host = socket.gethostname() or "host"
    return f"{host[: _MAX_NAME_CHARS - len(pid) - 1]}-{pid}"


def _check_worker_id(worker_id: object) -> str:
    # The core checks worker names at every claim; asking it here too reports
    # a bad id at construction rather than at the first claim, in its words.
    if not isinstance(worker_id, str):
        raise TypeError(f"worker_id must be a str or None, got {type(worker_id).__name__}")
    _validate_name("worker", worker_id)
    return worker_id


def _check_concurrency(concurrency: object) -> int:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int):
        raise TypeError(f"concurrency must be an int, got {type(concurrency).__name__}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    return concurrency


def _check_grace(grace_s: object) -> float:
    if isinstance(grace_s, bool) or not isinstance(grace_s, int | float):
        raise TypeError(f"grace_s must be a number of seconds, got {type(grace_s).__name__}")
    if not math.isfinite(grace_s) or grace_s < 0:
        raise ValueError(f"grace_s must be a finite number >= 0, got {grace_s}")
    return float(grace_s)


def _telemetry(enabled: object, worker_id: str) -> Telemetry | None:
    if not isinstance(enabled, bool):
        raise TypeError(f"telemetry must be a bool, got {type(enabled).__name__}")
    if not enabled:
        return None  # and nothing from opentelemetry is imported
    try:
        from alkstore import _otel
    except ImportError as exc:
        raise ImportError(
            "Worker(telemetry=True) needs the OpenTelemetry API: pip install 'alkstore[otel]'",
            name=exc.name,
        ) from exc
    return _otel.Telemetry(worker_id)


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine to await: an ``async def``
    function or method, an object whose ``__call__`` is one, or a
    ``functools.partial`` of either."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__ counts too
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


class Worker:
    """Runs registered handlers for claimed jobs, at most ``concurrency`` at once.

    ``worker_id`` (default ``"<hostname>-<pid>"``) is the name stamped on every
    claim. ``grace_s`` is how long a stop waits for running handlers before
    their jobs are released (back to pending, attempt refunded).

    ``telemetry=True`` (extra ``alkstore[otel]``) emits a span ``process
    <queue>`` per job and the metrics ``messaging.process.duration`` and
    ``messaging.client.consumed.messages`` through the global OpenTelemetry
    providers (docs/telemetry.md); without it nothing from OpenTelemetry is
    imported.
    """

    def __init__(
        self,
        store: Store,
        concurrency: int = 4,
        worker_id: str | None = None,
        *,
        grace_s: float = 30.0,
        telemetry: bool = False,
    ) -> None:
        if not isinstance(store, Store):
            raise TypeError(f"store must be an alkstore.Store, got {type(store).__name__}")
        self._store = store
        self._concurrency = _check_concurrency(concurrency)
        self._worker_id = default_worker_id() if worker_id is None else _check_worker_id(worker_id)
        self._grace_s = _check_grace(grace_s)
        self._telemetry = _telemetry(telemetry, self._worker_id)
        self._handlers: dict[str, Handler] = {}
        self._tally = Tally()
        self._lock = threading.Lock()
        self._run: Run | None = None

    def __repr__(self) -> str:
        return (
            f"<alkstore.Worker {self._worker_id!r} queues={list(self._handlers)} "
            f"concurrency={self._concurrency}{' running' if self.running else ''}>"
        )

    @property
    def store(self) -> Store:
        """The store jobs are claimed from."""
        return self._store

    @property
    def worker_id(self) -> str:
        """The name stamped on every claim."""
        return self._worker_id

    @property
    def concurrency(self) -> int:
        """The most handlers running at once, over every queue."""
        return self._concurrency

    @concurrency.setter
    def concurrency(self, value: int) -> None:
        value = _check_concurrency(value)
        with self._lock:
            if self._run is not None:
                raise RuntimeError("cannot change concurrency while the worker runs")
            self._concurrency = value

    @property
    def grace_s(self) -> float:
        """How long a stop waits for running handlers before releasing their jobs."""
        return self._grace_s

    @property
    def telemetry(self) -> bool:
        """Whether the worker emits OpenTelemetry spans and metrics."""
        return self._telemetry is not None

    @property
    def queues(self) -> list[str]:
        """The queues with a handler, in registration order."""
        return list(self._handlers)

    @property
    def counts(self) -> WorkerCounts:
        """Outcomes so far (over every ``run``), safe to read from any thread."""
        return self._tally.snapshot()

    @property
    def running(self) -> bool:
        """Whether ``run`` is in progress."""
        return self._run is not None

    def queue(self, name: str) -> Queue:
        """The queue handle registered for ``name`` (with its options, for enqueueing)."""
        try:
            return self._handlers[name].queue
        except KeyError:
            raise KeyError(f"no handler registered for queue {name!r}") from None

    def handler(
        self,
        queue: str,
        *,
        visibility_timeout_s: float | None = None,
        max_attempts: int | None = None,
        backoff_base_s: float | None = None,
        dead_letter_retention_s: float | None = None,
        timeout: float | timedelta | None = None,
    ) -> Callable[[F], F]:
        """Registers ``fn(payload, job)`` (plain or ``async def``) for ``queue``.

        The options are validated as ``store.queue`` does; like any queue
        handle's, they are stamped only on jobs enqueued through this handle
        (``worker.queue(name).enqueue(...)``), never on jobs already stored.
        ``timeout`` (seconds): an ``async def`` handler is cancelled past it,
        a sync one's outcome is discarded (its thread cannot be stopped); the
        job is retried either way, ``last_error`` naming the timeout.
        """
        q = self._store.queue(
            queue,
            visibility_timeout_s=visibility_timeout_s,
            max_attempts=max_attempts,
            backoff_base_s=backoff_base_s,
            dead_letter_retention_s=dead_letter_retention_s,
        )
        limit = None if timeout is None else _timeout("timeout", timeout)

        def register(fn: F) -> F:
            if not callable(fn):
                raise TypeError(f"a handler must be callable, got {type(fn).__name__}")
            self._add(Handler(q, fn, _is_async(fn), limit))
            return fn

        return register

    def _add(self, handler: Handler) -> None:
        """Registers ``handler`` for its queue (``handler`` and the task registry)."""
        queue = handler.queue.name
        with self._lock:
            if self._run is not None:
                raise RuntimeError("cannot register handlers while the worker runs")
            if queue in self._handlers:
                raise ValueError(f"queue {queue!r} already has a handler")
            self._handlers[queue] = handler

    def stop(self) -> None:
        """Asks a running ``run`` to stop, as SIGTERM does; a second call skips the grace."""
        current = self._run
        if current is not None:
            current.request_stop()

    def run(self, stop: StopToken | None = None) -> None:
        """Claims and runs jobs until ``stop`` is set, ``stop()`` is called or
        SIGTERM / SIGINT arrives (handled only when called from the main
        thread; the previous handlers are restored on return).

        On stop: no more claims; running handlers get ``grace_s`` seconds to
        finish, then their jobs are released. Returns normally after a stop;
        raises ``StoreClosed`` when the store is closed meanwhile.
        """
        if stop is not None and not isinstance(stop, StopToken):
            raise TypeError(f"stop must be an alkstore.StopToken or None, got {type(stop).__name__}")
        if not self._handlers:
            raise ValueError("no handlers registered: decorate a function with @worker.handler(queue)")
        if self._store.closed:
            raise StoreClosed("the store is closed")
        with self._lock:
            if self._run is not None:
                raise RuntimeError("this worker is already running")
            store = self._store
            run = self._run = Run(
                self._worker_id,
                list(self._handlers.values()),
                self._concurrency,
                self._grace_s,
                self._tally,
                self._telemetry,
                closed=lambda: store.closed,
            )
        watcher = _watch(stop, run) if stop is not None else None
        try:
            with handling(lambda _signum: run.request_stop()):
                try:
                    run.loop()
                except StoreClosed:
                    run.request_stop()
                    run.drain(closed=True)
                    raise
                except BaseException:
                    run.request_stop()
                    run.drain()
                    raise
                run.drain()
        finally:
            run.halt.stop()
            if watcher is not None:
                watcher.join()
            with self._lock:
                self._run = None


def _watch(stop: StopToken, run: Run) -> threading.Thread:
    """Relays the caller's ``stop`` token to ``run`` until the run ends."""

    def relay() -> None:
        while not run.halt.stopped:
            if stop.wait(0.1):
                run.request_stop()
                return

    t = threading.Thread(target=relay, name="alkstore-worker-stop", daemon=True)
    t.start()
    return t
