"""One ``Worker.run``: claim while a slot is free, start handlers, drain on stop.

Every start goes through ``_start``, which takes a slot under one lock, so
the in-flight count can never exceed ``concurrency``. Two threads claim:

* a handler thread whose sync handler just finished claims one ready job
  (trying each queue once, from the next in turn) and passes its slot to it
  directly; on a busy queue this is how jobs start, with no hop between
  threads per job (ADR 0022);
* the thread that called ``run`` (the main thread, for the CLI) claims
  whenever a slot is free and nobody took it:

1. wait for a free slot;
2. take what is ready now: ``claim_batch(free, timeout=0)`` on each queue in
   turn, starting one queue further each pass so a busy queue cannot starve
   the others;
3. nothing ready anywhere: wait for a commit or a due deadline. With one queue
   that is one waiting ``claim_batch``. With several, one waiter thread per
   queue runs a waiting ``claim`` under a shared stop token, which the first
   job to arrive sets, so the others return within the binding's 100 ms
   check. A second job claimed in that window runs if a slot is free and is
   released (attempt refunded) otherwise.

User code runs through ``alkstore._runner`` (heartbeats, and return /
exception / ``Fail`` to ack / retry / dead). On stop: no more claims, in-flight
handlers get ``grace_s`` to finish, then whatever still runs is released.

With telemetry (``alkstore._otel``) each started job carries a span, ended
wherever its outcome is counted, before its slot frees: every span has ended
by the time ``run`` returns.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from alkstore import _runner
from alkstore._core import JobHandle, Queue, StopToken
from alkstore._errors import AlkstoreError, ConnectionLost, DatabaseError, Fail, Retry, Snooze, StoreClosed
from alkstore._executors import Call, Escaped, LoopThread, Pending, ThreadPool
from alkstore._tally import Tally

if TYPE_CHECKING:  # importing _otel imports opentelemetry: only with telemetry on
    from alkstore._otel import Processing, Telemetry

__all__ = ["Handler", "Route", "Run", "route_of"]

log = logging.getLogger("alkstore.worker")
# A library logs but never configures logging: without a handler set up by
# the application, records are dropped instead of reaching logging's
# last-resort stderr printer. `alkstore worker` configures one.
logging.getLogger("alkstore").addHandler(logging.NullHandler())

#: Longest single wait for work; commits and due deadlines end it sooner.
WAIT_S = 5.0
#: How often the claiming thread looks at the stop flag while it blocks.
SLICE_S = 0.1
#: Ceiling of the pause after a failed claim (the database went away).
MAX_BACKOFF_S = 30.0


#: What runs one job: the function (called as ``fn(payload, job)``), whether
#: it is ``async def``, and its timeout in seconds (None: none).
Route = tuple[Callable[[Any, JobHandle], Any], bool, float | None]


@dataclass(frozen=True)
class Handler:
    """A registered handler and the queue it consumes.

    ``route``, when given, picks what runs each job of the queue instead
    (tasks: by the task name in the payload, ``alkstore._tasks``).
    """

    queue: Queue
    fn: Callable[[Any, JobHandle], Any]
    is_async: bool
    timeout: float | None = None
    route: Callable[[JobHandle], Route] | None = None


@dataclass(eq=False, slots=True)
class _InFlight:
    job: JobHandle
    span: Processing | None = None  # with telemetry on: ended where the outcome is counted
    future: Pending[_runner.Outcome] | None = None
    outcome: str | None = None  # set when the handler's future finishes
    releasing: bool = False  # the drain is releasing it: it does the counting
    settled: bool = False  # counted once, by whoever got there first
    finished: bool = False  # its handler's future is done
    abandoned: bool = False  # timed out while its sync handler runs on: its slot is free
    # The job claimed with this one's ack, and the handler whose queue the
    # claim tried (set by the pool thread before the done callback runs).
    next: tuple[Handler, JobHandle] | None = None
    tried: Handler | None = None


def _report(job: JobHandle, exc: Exception) -> None:
    """Logs a handler's exception: the traceback for a failure that will be
    retried (or go dead at budget), one line for a deliberate ``Fail``,
    ``Retry`` or ``Snooze``."""
    if isinstance(exc, (Fail, Retry, Snooze)):
        log.info("job %d of %r: %r", job.id, job.queue, exc)
    else:
        log.warning(
            "job %d of %r raised (attempt %d/%d)",
            job.id,
            job.queue,
            job.attempts,
            job.max_attempts,
            exc_info=exc,
        )


def route_of(route: Callable[[JobHandle], Route], job: JobHandle) -> Route:
    """What ``route`` picks to run ``job``; when it raises (the payload it
    reads cannot be decoded), a sync function raising the same, so the
    runner settles the job by it (``PayloadError``: dead now) and the
    error never reaches the claiming loop."""
    try:
        return route(job)
    except Exception as exc:
        error = exc

        def refuse(_payload: Any, _job: JobHandle) -> Any:
            raise error

        return refuse, False, None


def _call_sync(fn: Callable[[Any, JobHandle], Any], job: JobHandle) -> Any:
    try:
        result = fn(job.payload, job)
        if result is not None and inspect.isawaitable(result):
            # A plain function that returned a coroutine: acking it unawaited would
            # drop the work. Retry instead, and say how to register it.
            if inspect.iscoroutine(result):
                result.close()
            raise TypeError(f"the handler of {job.queue!r} returned an awaitable; declare it `async def`")
        return result
    except Exception as exc:
        _report(job, exc)
        raise


async def _call_async(fn: Callable[[Any, JobHandle], Awaitable[Any]], job: JobHandle) -> Any:
    try:
        return await fn(job.payload, job)
    except Exception as exc:
        _report(job, exc)
        raise


#: The tally name of each runner outcome but a retry (see ``_kind``).
_KINDS = {
    "acked": "acked",
    "retried": "retried",
    "failed": "dead",
    "released": "released",
    "snoozed": "snoozed",
    "cancelled": "cancelled",
}


def _kind(outcome: _runner.Outcome, job: JobHandle) -> str:
    """The tally name of a runner outcome; a retry on the last attempt went dead."""
    if outcome == "retried" and job.attempts >= job.max_attempts:
        return "dead"
    return _KINDS.get(outcome, "lost")


class Run:
    """The state of one ``Worker.run`` call."""

    def __init__(
        self,
        worker_id: str,
        handlers: Sequence[Handler],
        concurrency: int,
        grace_s: float,
        tally: Tally,
        telemetry: Telemetry | None = None,
        closed: Callable[[], bool] = lambda: False,
    ) -> None:
        self.halt = StopToken()
        self._closed = closed  # whether the store was closed
        self._worker_id = worker_id
        self._handlers = list(handlers)
        self._concurrency = concurrency
        self._grace_s = grace_s
        self._tally = tally
        self._telemetry = telemetry
        self._hurry = False
        self._round: StopToken | None = None
        # Guards _inflight. Critical sections enter the lock itself: a
        # Condition's __enter__/__exit__ are Python calls, ten per job here.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._inflight: dict[int, _InFlight] = {}
        self._seq = itertools.count()
        self._turn = itertools.count()  # where a handler thread's next claim starts
        # Made when first needed: a routed queue (tasks) may run either kind.
        self._pool: ThreadPool | None = None
        self._loop: LoopThread | None = None
        self._executors = threading.Lock()

    # -- stopping -----------------------------------------------------------

    def request_stop(self) -> None:
        """Stop claiming; a second request skips what is left of the grace.

        Safe from a signal handler: it takes no Python lock.
        """
        if self.halt.stopped:
            self._hurry = True
        self.halt.stop()
        current = self._round
        if current is not None:
            current.stop()

    # -- claiming -----------------------------------------------------------

    def loop(self) -> None:
        """Claims and starts jobs until stopped. Raises ``StoreClosed`` when the store closes."""
        start = 0
        failures = 0
        while self._wait_for_slot():
            try:
                found = self._claim_ready(start)
                start = (start + 1) % len(self._handlers)
                if not found:
                    self._wait_for_work()
            except DatabaseError as exc:
                failures += 1
                pause = min(MAX_BACKOFF_S, 2.0 ** (failures - 1))
                log.warning("claiming failed (%s); trying again in %.0f s", exc, pause)
                self.halt.wait(pause)
            else:
                failures = 0

    def _free(self) -> int:
        with self._lock:
            return self._concurrency - len(self._inflight)

    def _wait_for_slot(self) -> bool:
        with self._lock:
            while len(self._inflight) >= self._concurrency and not self.halt.stopped:
                if self._closed():  # every slot busy: no claim would meet the closed store
                    raise StoreClosed("the store is closed")
                self._cond.wait(SLICE_S)
        return not self.halt.stopped

    def _claim_ready(self, start: int) -> bool:
        found = False
        n = len(self._handlers)
        for i in range(n):
            free = self._free()
            if free <= 0 or self.halt.stopped:
                break
            h = self._handlers[(start + i) % n]
            jobs = h.queue.claim_batch(self._worker_id, free, timeout=0)
            for job in jobs:
                self._start(h, job)
            found = found or bool(jobs)
        return found

    def _wait_for_work(self) -> None:
        round_ = StopToken()
        self._round = round_
        try:
            if self.halt.stopped:  # a stop that came before the round was visible
                return
            if len(self._handlers) == 1:
                h = self._handlers[0]
                for job in h.queue.claim_batch(
                    self._worker_id, max(1, self._free()), timeout=WAIT_S, stop=round_
                ):
                    self._start(h, job)
            else:
                self._wait_many(round_)
        finally:
            self._round = None

    def _wait_many(self, round_: StopToken) -> None:
        results: queue.SimpleQueue[tuple[Handler, JobHandle | BaseException | None]] = queue.SimpleQueue()

        def wait(h: Handler) -> None:
            try:
                got: JobHandle | BaseException | None = h.queue.claim(
                    self._worker_id, timeout=WAIT_S, stop=round_
                )
            except BaseException as exc:  # re-raised on the claiming thread
                got = exc
            results.put((h, got))

        threads = [
            threading.Thread(target=wait, args=(h,), name=f"alkstore-wait-{h.queue.name}", daemon=True)
            for h in self._handlers
        ]
        for t in threads:
            t.start()
        error: BaseException | None = None
        for _ in threads:
            while True:
                try:
                    h, got = results.get(timeout=SLICE_S)  # in slices: signal handlers run in between
                    break
                except queue.Empty:
                    continue
            if isinstance(got, BaseException):
                round_.stop()
                error = error or got
            elif got is not None:
                round_.stop()
                self._start(h, got)
        for t in threads:
            t.join()
        if error is not None:
            raise error

    # -- running ------------------------------------------------------------

    def _start(self, h: Handler, job: JobHandle, replacing: int | None = None) -> None:
        """Starts ``job`` on a free slot, or gives it back when there is none.

        ``replacing``: the finished job whose slot ``job`` takes over (see
        ``_done``); freed and retaken under one lock, so the claiming thread
        never sees the slot free in between.
        """
        telemetry = self._telemetry
        # Opened before the slot is taken, so a drain that finds the job in
        # flight always finds its span too.
        span = None if telemetry is None else telemetry.start(job)
        with self._lock:
            if replacing is not None:
                self._inflight.pop(replacing, None)
            run = not self.halt.stopped and len(self._inflight) < self._concurrency
            if run:
                seq = next(self._seq)
                rec = _InFlight(job, span)
                self._inflight[seq] = rec
            elif replacing is not None:
                self._cond.notify_all()  # the slot is free after all: the claimer and the drain look
        if not run:
            if replacing is not None:
                self._tally.finished()  # the finished job's count, which nothing takes over
            landed = self._release(job)
            if landed:
                self._tally.add("released")
            if span is not None:
                span.end("released" if landed else "lost")
            return
        if replacing is None:
            self._tally.started()  # a job replacing another takes over its in-flight count
        fn, is_async, timeout = (h.fn, h.is_async, h.timeout) if h.route is None else route_of(h.route, job)
        fut: Pending[_runner.Outcome]
        retried = self._tally.settle_retried
        if is_async:
            loop = self._loop or self._executor(True)
            if span is None:
                fut = loop.submit(
                    _runner.run_async(job, lambda j: _call_async(fn, j), retried, timeout, True)
                )
            else:
                fut = loop.submit(
                    _runner.run_async(
                        job, lambda j: span.run_async(_call_async(fn, j)), retried, timeout, True
                    )
                )
        else:
            pool = self._pool or self._executor(False)
            # A finished job's hand-off (see _done) runs on the thread that finished it.
            here = replacing is not None
            ack: _runner.Ack = partial(self._ack_then_claim, rec)
            late = None if timeout is None else (lambda outcome: self._timed_out(seq, rec, outcome))
            if span is None:
                # partial, not lambda: two Python frames fewer per job.
                call = pool.submit(
                    partial(
                        _runner.run_sync, job, partial(_call_sync, fn), ack, retried, timeout, late, True
                    ),
                    here,
                )
            else:
                call = pool.submit(
                    lambda: _runner.run_sync(
                        job, lambda j: span.run(lambda: _call_sync(fn, j)), ack, retried, timeout, late, True
                    ),
                    here,
                )
            fut = call
        rec.future = fut
        # Whether the job ran on the event loop is the route's answer, not the
        # queue's: a task queue runs sync and async tasks alike.
        fut.add_done_callback(partial(self._done, seq, rec, is_async))

    def _executor(self, is_async: bool) -> Any:
        """The event loop or the thread pool, made on first use."""
        with self._executors:
            if is_async:
                if self._loop is None:
                    self._loop = LoopThread("alkstore-handler-loop")
                return self._loop
            if self._pool is None:
                self._pool = ThreadPool(self._concurrency, "alkstore-handler")
            return self._pool

    def _timed_out(self, seq: int, rec: _InFlight, outcome: _runner.Outcome) -> None:
        """A sync handler ran past its timeout, and its alarm settled the job
        (``outcome``: retried, or cancelled / lost when the retry could not
        land): count it and free its slot. A thread still running is abandoned
        (its outcome lands nowhere) and the pool may start another meanwhile;
        one that already returned left the job to this (``timed_out``)."""
        kind = _kind(outcome, rec.job)
        with self._lock:
            if rec.settled or rec.releasing:
                return  # the drain gave the job back first
            self._tally.add(kind)
            rec.settled = True
            running = not rec.finished
            rec.abandoned = running
            self._inflight.pop(seq, None)
            self._cond.notify_all()
        self._tally.finished()
        if rec.span is not None:
            rec.span.end(kind)
        if running and self._pool is not None and isinstance(rec.future, Call):
            self._pool.abandon(rec.future)

    def _done(self, seq: int, rec: _InFlight, on_loop: bool, fut: Pending[_runner.Outcome]) -> None:
        """Counts a finished job and frees its slot, or hands the slot to the
        next ready job. Runs where the job ran: its pool thread, or the event
        loop's thread for an async handler (``on_loop``)."""
        kind: str | None
        timed_out = False
        try:
            outcome = fut.result()
        except CancelledError:
            kind = None  # cancelled after the drain released it
        except BaseException as exc:
            kind = self._after_crash(rec.job, exc)
        else:
            timed_out = outcome == "timed_out"
            kind = None if timed_out else _kind(outcome, rec.job)
        with self._lock:
            rec.finished = True
            abandoned = rec.abandoned
        if abandoned or timed_out:
            # Its alarm counts it and frees its slot: it did already, or does
            # once its retry is done.
            return
        if rec.span is not None:
            self._end_span(rec, kind)
        # A handler thread that finished takes the next ready job itself and
        # hands it its slot: no wake of the claiming thread and no hop between
        # threads per job. Not on the event loop's thread: a claim blocks, and
        # every async job would wait for it.
        nxt = rec.next
        if nxt is None and not on_loop and not self.halt.stopped:
            nxt = self._next_ready(rec.tried)
        counted: str | None = None
        with self._lock:
            rec.outcome = kind
            if kind is not None and not rec.releasing and not rec.settled:
                self._tally.add(kind)
                rec.settled = True
                counted = kind
            if nxt is None:
                self._inflight.pop(seq, None)
                self._cond.notify_all()
        if nxt is None:
            self._tally.finished()  # else the next job takes over its count with its slot
        if counted is not None and rec.span is not None:
            rec.span.end(counted)  # the drain let go of it after _end_span looked
        if nxt is not None:
            self._start(*nxt, replacing=seq)

    def _ack_then_claim(self, rec: _InFlight, job: JobHandle, result: Any) -> bool | None:
        """The ack of ``rec``'s job for its runner (``partial(self._ack_then_claim,
        rec)`` is the runner's ``Ack``): with it, in one transaction, the claim
        of the next job from the next queue in turn (one commit per job
        instead of two, ADR 0022)."""
        if self.halt.stopped or job.cancel_requested:
            return None  # a plain ack: nothing more is claimed (nor by a timed-out thread)
        h = self._handlers[next(self._turn) % len(self._handlers)]
        try:
            if result is None:
                landed, jobs = h.queue._ack_then_claim(job, self._worker_id, 1)
            else:
                landed, jobs = h.queue._ack_then_claim(job, self._worker_id, 1, result=result)
        except ConnectionLost:
            raise  # it may have committed before its reply was lost: the runner must know
        except (AlkstoreError, TypeError, ValueError):
            # It rolled back (or the result is past the payload bound): the
            # plain ack tries again, and raises or drops the result if it must.
            return None
        rec.tried = h
        if jobs:
            rec.next = (h, jobs[0])
        return landed

    def _next_ready(self, tried: Handler | None = None) -> tuple[Handler, JobHandle] | None:
        """One ready job, trying each queue once from the next in turn, except
        ``tried`` (its fast claim just came back empty: what only the full
        claim finds, a lapsed lease, is the claiming thread's); None when there
        is none or the claim failed (the claiming thread then meets the error
        itself and backs off)."""
        n = len(self._handlers)
        first = next(self._turn)
        for i in range(n):
            h = self._handlers[(first + i) % n]
            if h is tried:
                continue
            try:
                jobs = h.queue.claim_batch(self._worker_id, 1, timeout=0)
            except AlkstoreError:
                return None
            if jobs:
                return h, jobs[0]
        return None

    def _end_span(self, rec: _InFlight, kind: str | None) -> None:
        """Counts ``rec``'s outcome and ends its span while it still holds its
        slot (so the drain waits for the span), outside the lock (an exporter
        may be slow). A job the drain is releasing is the drain's to count."""
        assert rec.span is not None
        with self._lock:
            if kind is None or rec.releasing or rec.settled:
                return
            rec.outcome = kind
            self._tally.add(kind)
            rec.settled = True
        rec.span.end(kind)

    def _after_crash(self, job: JobHandle, exc: BaseException) -> str:
        """Something escaped the runner: a BaseException from the handler, or
        the outcome's own database call failed. Retry on the curve if we can."""
        if isinstance(exc, Escaped):
            exc = exc.original
        if isinstance(exc, StoreClosed):
            # The store was closed under the run: the drain says so once for
            # every job, and nothing can land. The job stays processing until
            # its lease lapses, then runs again.
            return "lost"
        log.error("job %d of %r: %r escaped the handler", job.id, job.queue, exc)
        try:
            return _kind("retried", job) if job.retry(repr(exc)) else "lost"
        except Exception:
            return "lost"

    @staticmethod
    def _release(job: JobHandle) -> bool:
        try:
            return job.release()
        except AlkstoreError as exc:
            log.warning("could not release job %d of %r: %s", job.id, job.queue, exc)
            return False

    # -- draining -----------------------------------------------------------

    def drain(self, *, closed: bool = False) -> None:
        """Waits up to ``grace_s`` for in-flight handlers, then releases the rest.

        With ``closed`` (the store was closed) nothing can land: skip to the end.
        """
        deadline = time.monotonic() + self._grace_s
        with self._lock:
            while self._inflight and not closed and not self._hurry:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(SLICE_S, left))
            # A settled job is only finishing up (its span ending): nothing to release.
            stuck = [rec for rec in self._inflight.values() if not rec.settled]
            for rec in stuck:
                rec.releasing = True
        for rec in stuck:
            landed = not closed and self._release(rec.job)
            counted: str | None = None
            with self._lock:
                rec.releasing = False
                if landed:
                    counted = "released"
                elif rec.outcome is not None and not rec.settled:
                    counted = rec.outcome
                if counted is not None:
                    self._tally.add(counted)
                    rec.settled = True
            if counted is not None and rec.span is not None:
                rec.span.end(counted)
            if landed and rec.future is not None:
                rec.future.cancel()  # async handlers stop at their next await
        if self._loop is not None:
            self._loop.shutdown()
        if self._pool is not None:
            self._pool.shutdown()
        if closed:
            log.warning(
                "the store was closed while the worker ran%s; the worker stopped",
                f": {len(stuck)} running job(s) stay processing until their leases lapse, then run again"
                if stuck
                else "",
            )
        elif stuck:
            waited = "the second stop" if self._hurry else f"{self._grace_s:.0f} s after the stop"
            log.warning("%d job(s) had not finished %s; released them", len(stuck), waited)
