"""The transactional outbox (SPEC §7): a helper over one queue.

An outbox is the queue ``__alkstore_outbox:<name>``, reachable only through
``store.outbox(name)``. Producers ``enqueue`` inside their business
transaction (``tx=``), so the message exists exactly when the business write
committed; a relay calls ``deliver(send)``, which hands each payload to
``send`` and settles the job through ``alkstore._runner`` (return → ack,
exception → retry on the engine's curve, dead after ``max_attempts``), with
the lease heartbeated while ``send`` runs.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from alkstore import _runner
from alkstore._core import (
    Job,
    JobHandle,
    JobIterator,
    Queue,
    QueueStats,
    StopToken,
    Swept,
    Transaction,
)

__all__ = ["Outbox"]

#: How often a multi-threaded ``deliver`` looks at ``stop`` and at its relays.
_SUPERVISE_S = 0.1


def _check_send(send: object) -> None:
    # Checked before anything is claimed: a relay would otherwise "fail" every
    # message with this TypeError and dead-letter them all (SPEC §7).
    if not callable(send):
        raise TypeError(f"send must be callable (a function taking the payload), got {type(send).__name__}")


def _check_concurrency(concurrency: int) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int):
        raise TypeError(f"concurrency must be an int, got {type(concurrency).__name__}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")


class Outbox:
    """Messages committed with the caller's transaction, delivered at least once.

    Build it with ``store.outbox(name, ...)``; the options are the queue's.
    """

    __slots__ = ("_name", "_queue")

    def __init__(self, queue: Queue, name: str) -> None:
        self._queue = queue
        self._name = name

    @property
    def name(self) -> str:
        """The outbox name (its queue is ``__alkstore_outbox:<name>``)."""
        return self._name

    def __repr__(self) -> str:
        return f"<alkstore.Outbox {self._name!r}>"

    # ------------------------------------------------------------ producing
    def enqueue(
        self,
        payload: Any,
        *,
        delay: float | timedelta | None = None,
        priority: int = 0,
        expires: float | timedelta | None = None,
        unique_key: str | None = None,
        tx: Transaction | None = None,
        conn: object | None = None,
    ) -> int:
        """Adds one message; with ``tx=`` (alkstore's transaction) or ``conn=`` (your own
        connection, ADR 0015) it lands only if that transaction commits. With
        ``unique_key=``, a message whose key is live already is not added again:
        its id comes back (SPEC §18)."""
        return self._queue.enqueue(
            payload, delay=delay, priority=priority, expires=expires, unique_key=unique_key, tx=tx, conn=conn
        )

    def aenqueue(
        self,
        payload: Any,
        *,
        delay: float | timedelta | None = None,
        priority: int = 0,
        expires: float | timedelta | None = None,
        unique_key: str | None = None,
        conn: object | None = None,
    ) -> Awaitable[int]:
        """``enqueue`` for async code: on your async driver's ``conn=``, or on a thread."""
        return self._queue.aenqueue(
            payload, delay=delay, priority=priority, expires=expires, unique_key=unique_key, conn=conn
        )

    # ------------------------------------------------------------ relaying
    def deliver(
        self,
        send: Callable[[Any], object],
        worker_id: str = "relay-1",
        stop: StopToken | None = None,
        concurrency: int = 1,
    ) -> None:
        """Calls ``send(payload)`` for each message until ``stop`` is set.

        Return → ack; exception → retry on the engine's curve (dead after
        ``max_attempts``). With ``concurrency > 1``, that many threads relay
        at once; the first error stops them all and is raised here.
        ``store.close()`` ends it with ``StoreClosed``.
        """
        _check_send(send)
        _check_concurrency(concurrency)
        if concurrency == 1:
            self._relay(send, worker_id, stop)
            return
        self._deliver_threads(send, worker_id, stop, concurrency)

    def _relay(self, send: Callable[[Any], object], worker_id: str, stop: StopToken | None) -> None:
        for job in self._queue.jobs(worker_id, stop=stop):
            _runner.run_sync(job, lambda j: send(j.payload))

    def _deliver_threads(
        self, send: Callable[[Any], object], worker_id: str, stop: StopToken | None, concurrency: int
    ) -> None:
        # The relays share one inner token, so an error in one (or Ctrl-C
        # here) stops the others instead of leaving them running.
        inner = StopToken()
        errors: list[BaseException] = []

        def relay() -> None:
            try:
                self._relay(send, worker_id, inner)
            except BaseException as exc:  # handed to the caller below
                errors.append(exc)
                inner.stop()

        threads = [
            threading.Thread(target=relay, name=f"alkstore-relay-{i}", daemon=True)
            for i in range(concurrency)
        ]
        for t in threads:
            t.start()
        try:
            while alive := [t for t in threads if t.is_alive()]:
                if stop is not None and stop.stopped:
                    inner.stop()
                alive[0].join(_SUPERVISE_S)
        finally:
            inner.stop()
            for t in threads:
                t.join()
        if errors:
            raise errors[0]

    async def adeliver(
        self,
        send: Callable[[Any], Awaitable[object] | object],
        worker_id: str = "relay-1",
        stop: StopToken | None = None,
        concurrency: int = 1,
    ) -> None:
        """The asyncio twin of ``deliver``: ``concurrency`` relay tasks;
        ``send`` may be a coroutine function (or a plain one).

        Cancelling it (or the TaskGroup around it) gives back every message
        its relays hold — those waiting for a claim and those inside ``send``
        — pending again with the attempt refunded.
        """
        _check_send(send)
        _check_concurrency(concurrency)

        async def call(job: JobHandle) -> None:
            result = send(job.payload)
            if inspect.isawaitable(result):
                await result

        async def relay() -> None:
            async for job in self._queue.jobs(worker_id, stop=stop):
                await _runner.run_async(job, call)

        # A TaskGroup cancels the other relays when one fails.
        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(relay())

    # ------------------------------------------------------------ the queue's surface
    def claim(
        self, worker_id: str, *, timeout: float | timedelta | None = 0, stop: StopToken | None = None
    ) -> JobHandle | None:
        """As ``Queue.claim``."""
        return self._queue.claim(worker_id, timeout=timeout, stop=stop)

    def claim_batch(
        self,
        worker_id: str,
        n: int,
        *,
        timeout: float | timedelta | None = 0,
        stop: StopToken | None = None,
    ) -> list[JobHandle]:
        """As ``Queue.claim_batch``."""
        return self._queue.claim_batch(worker_id, n, timeout=timeout, stop=stop)

    def jobs(self, worker_id: str, *, stop: StopToken | None = None, batch: int = 1) -> JobIterator:
        """As ``Queue.jobs``."""
        return self._queue.jobs(worker_id, stop=stop, batch=batch)

    def get_job(self, job_id: int, tx: Transaction | None = None) -> Job | None:
        """As ``Queue.get_job``."""
        return self._queue.get_job(job_id, tx=tx)

    def sweep_expired(self) -> Swept:
        """As ``Queue.sweep_expired``."""
        return self._queue.sweep_expired()

    def stats(self) -> QueueStats:
        """As ``Queue.stats``."""
        return self._queue.stats()

    def dead_jobs(self, limit: int = 100, before_id: int | None = None) -> list[Job]:
        """As ``Queue.dead_jobs``."""
        return self._queue.dead_jobs(limit, before_id)
