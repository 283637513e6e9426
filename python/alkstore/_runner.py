"""Running user code for a claimed job: the one place that turns a return or
an exception into ack / retry / dead / snooze, and keeps the lease alive
while the code runs. Used by ``Outbox.deliver``, ``Worker`` and
``alkstore.testing.drain``.

Outcomes (SPEC §7, §11, §22):

* return                 → ``ack``, the returned value as the job's result
                           (SPEC §25; a value that is not JSON is logged and
                           the job acked without one: its work is done)
* ``alkstore.Fail``      → ``fail(str(exc))``: dead now
* the job's own payload cannot be decoded (``PayloadError`` reading it: text
  written around the enqueue checks) → ``fail(message)``: dead now, since
  every attempt would read the same text
* ``alkstore.Retry``     → ``retry(error, delay=after)``: the attempt counts
* ``alkstore.Snooze``    → ``snooze(seconds)``: back later, the attempt refunded
* past the timeout       → ``retry("timed out after N s")``
* cancelled meanwhile    → nothing to settle (the row is gone): ``cancelled``
* other exception        → ``retry(repr(exc))`` on the engine's curve (dead at budget)

The code may settle the job itself first — ``job.ack(tx=tx)`` to complete it
with its own business write, ``job.retry(delay=...)`` to put it off — and
then the outcome is what it did; only a job nobody settled while the lease
held is ``lost``.

While the code runs, its lease is renewed every third of the job's
visibility timeout (``alkstore._beats``), so slow work is not reclaimed and
run twice; a refused heartbeat whose row is gone means the job was cancelled:
``job.cancel_requested`` turns true and an ``async def`` handler is cancelled.

Settling is tried again when it fails for a moment (``DatabaseError.transient``:
a SQLite file whose write lock the application held past ``busy_timeout_ms``,
a lost Postgres connection), with heartbeats going on, for as long as the
lease may hold: a job whose work succeeded is not run again, nor dead-lettered
at its last attempt, for a busy second. Only a lost lease ends that.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from alkstore._aio import release
from alkstore._beats import BEATS, Entry, beat_interval, may_hold
from alkstore._core import JobHandle, _check_json
from alkstore._errors import DatabaseError, Fail, PayloadError, Retry, Snooze

__all__ = [
    "Ack",
    "OnRetry",
    "OnTimeout",
    "Outcome",
    "TimedOut",
    "current_job",
    "heartbeating",
    "result_of",
    "run_async",
    "run_sync",
    "settle",
]

Outcome = Literal["acked", "retried", "failed", "released", "snoozed", "cancelled", "lost"]

#: What ``JobHandle._settled`` says the code itself did.
_SETTLED: dict[str | None, Outcome] = {
    "acked": "acked",
    "retried": "retried",
    "failed": "failed",
    "released": "released",
    "snoozed": "snoozed",
}

#: The first pause before settling again after a transient error; it doubles
#: up to the second, and the heartbeats go on meanwhile.
_SETTLE_PAUSE_S = 0.05
_SETTLE_PAUSE_MAX_S = 1.0

log = logging.getLogger("alkstore.worker")

#: The job the code running in this context was handed (``alkstore.current_job``).
_CURRENT: contextvars.ContextVar[JobHandle] = contextvars.ContextVar("alkstore_current_job")


def current_job() -> JobHandle:
    """The job whose handler or task is running in this thread or task;
    ``LookupError`` outside one."""
    try:
        return _CURRENT.get()
    except LookupError:
        raise LookupError(
            "no alkstore job is running here (current_job() is for handlers and tasks)"
        ) from None


class TimedOut(Exception):
    """The code ran past its ``timeout``: retried, the message as ``last_error``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds


@contextmanager
def heartbeating(job: JobHandle) -> Iterator[None]:
    """Renews ``job``'s lease in the background for the duration of the block."""
    entry = BEATS.add(job, beat_interval(job))
    try:
        yield
    finally:
        BEATS.remove(entry)


#: An ack that may do more in the same transaction (the Worker claims its
#: next job with it, ADR 0022), given the job and its result (None: none):
#: whether it landed, or None to fall back to ``job.ack()``.
Ack = Callable[[JobHandle, Any], "bool | None"]

#: Called once per settle tried again after a transient error (the Worker counts them).
OnRetry = Callable[[], None]

#: Called on the timetable's thread when a sync run's timeout settled the job
#: while its thread runs on: the outcome the timeout gave it.
OnTimeout = Callable[[Outcome], None]


def _land(
    what: str, op: Callable[[], bool], job: JobHandle, beat: Entry | None, on_retry: OnRetry | None
) -> bool:
    """Runs the settling ``op``, again after each transient error while the
    lease may hold; False once it cannot hold any more (the job is lost)."""
    pause = _SETTLE_PAUSE_S
    tries = 0
    while True:
        try:
            landed = op()
        except DatabaseError as exc:
            if not exc.transient:
                raise
            if not may_hold(job, beat):
                log.error(
                    "job %d of %r: the %s failed (%s) until its lease could no longer hold; "
                    "it will run again once the lease lapses",
                    job.id,
                    job.queue,
                    what,
                    exc,
                )
                return False
            tries += 1
            if tries == 1:
                log.warning(
                    "job %d of %r: the %s failed for now (%s); trying again while its lease holds",
                    job.id,
                    job.queue,
                    what,
                    exc,
                )
            if on_retry is not None:
                on_retry()
            time.sleep(pause)
            pause = min(pause * 2, _SETTLE_PAUSE_MAX_S)
            continue
        if tries:
            log.info("job %d of %r: the %s landed after %d more tries", job.id, job.queue, what, tries)
        return landed


def _unkept(job: JobHandle, exc: Exception) -> None:
    log.warning(
        "job %d of %r: its return value is not a JSON result (%s), so none is kept; the job is acked",
        job.id,
        job.queue,
        exc,
    )


def result_of(job: JobHandle, value: object) -> object:
    """``value`` as ``job``'s result, or None when it is not JSON: the code ran
    and its work is done, so the job is acked without a result rather than
    run again or dead-lettered for what it returned; a warning says why."""
    if value is None:
        return None
    try:
        _check_json(value, "result")
    except (TypeError, ValueError) as exc:
        _unkept(job, exc)
        return None
    return value


def _acking(job: JobHandle, result: Any) -> Callable[[], bool]:
    if result is None:
        return job.ack  # the plain ack: no keyword to parse on the hot path

    def ack() -> bool:
        try:
            return job.ack(result=result)
        except (TypeError, ValueError) as exc:  # JSON, but past the payload bound
            _unkept(job, exc)
            return job.ack()

    return ack


def settle(
    job: JobHandle,
    error: BaseException | None,
    ack: Ack | None = None,
    beat: Entry | None = None,
    on_retry: OnRetry | None = None,
    result: object = None,
) -> Outcome:
    """Records the outcome of running ``job`` (see the module's table).
    ``beat``, the job's heartbeat entry (still beating), lets a transient
    failure be tried again while the lease may hold. ``result``, what the
    code returned, becomes the job's result when it acks (JSON or nothing,
    :func:`result_of`)."""
    outcome: Outcome
    if job.cancel_requested and job._settled is None:
        return "cancelled"  # its row is gone: nothing to settle, nothing to run again
    if error is None:
        kept = result_of(job, result) if result is not None and job._settled is None else None
        landed = None if ack is None else ack(job, kept)
        if landed is None:
            landed = _land("ack", _acking(job, kept), job, beat, on_retry)
        outcome = "acked"
    elif isinstance(error, Fail):
        message = str(error)
        landed, outcome = _land("fail", lambda: job.fail(message), job, beat, on_retry), "failed"
    elif isinstance(error, PayloadError) and (unreadable := _undecodable(job)) is not None:
        log.error("job %d of %r: %s; dead-lettered (no attempt could read it)", job.id, job.queue, unreadable)
        landed, outcome = _land("fail", lambda: job.fail(unreadable), job, beat, on_retry), "failed"
    elif isinstance(error, Snooze):
        seconds = error.seconds
        landed, outcome = _land("snooze", lambda: job.snooze(seconds), job, beat, on_retry), "snoozed"
    elif isinstance(error, Retry):
        message, after = error.error if error.error is not None else repr(error), error.after
        landed = _land("retry", lambda: job.retry(message, delay=after), job, beat, on_retry)
        outcome = "retried"
    else:
        message = str(error) if isinstance(error, TimedOut) else repr(error)
        landed, outcome = _land("retry", lambda: job.retry(message), job, beat, on_retry), "retried"
    if landed:
        return outcome
    # Nothing left to settle: the code did it through this handle (its
    # outcome counts), or the job was cancelled while its lease held (its
    # row is gone), or the lease lapsed (lost: it runs again). (A handler's
    # op inside a transaction that then rolled back still reads as settled;
    # our own op lands in that case unless the lease lapsed too.)
    done = _SETTLED.get(job._settled)
    if done is not None:
        return done
    if may_hold(job, beat) and _gone(job):
        job._request_cancel()
        return "cancelled"
    return "lost"


def _undecodable(job: JobHandle) -> str | None:
    """Why ``job``'s own payload cannot be decoded, or None when it can (a
    ``PayloadError`` the code met elsewhere, e.g. refused by an enqueue it
    made, is an ordinary failure)."""
    try:
        _ = job.payload
    except PayloadError as exc:
        return str(exc)
    return None


def _gone(job: JobHandle) -> bool:
    try:
        return job._gone()
    except Exception:
        return False


def _time_out(job: JobHandle, seconds: float, on_timeout: OnTimeout | None) -> Callable[[], None]:
    """The alarm of a sync run's ``timeout``: its thread cannot be stopped, so
    the job is retried now (the handle is marked so cooperative code can
    stop) and whatever the thread does later lands nowhere."""

    def fire() -> None:
        job._request_cancel()
        try:
            landed = job.retry(str(TimedOut(seconds)))
        except Exception as exc:  # the lease is left to lapse, as after a crash
            log.warning("job %d of %r: timed out, and the retry failed: %s", job.id, job.queue, exc)
            return
        if landed:
            log.warning("job %d of %r timed out after %g s; retried", job.id, job.queue, seconds)
            if on_timeout is not None:
                on_timeout("retried")

    return fire


def run_sync(
    job: JobHandle,
    fn: Callable[[JobHandle], Any],
    ack: Ack | None = None,
    on_retry: OnRetry | None = None,
    timeout: float | None = None,
    on_timeout: OnTimeout | None = None,
    results: bool = False,
) -> Outcome:
    """Runs ``fn(job)`` with heartbeats and settles the job by its outcome
    (a return acks through ``ack`` when given, with what ``fn`` returned as
    the job's result when ``results``); the heartbeats go on until
    the outcome landed. Past ``timeout`` seconds the job is retried at once
    and ``on_timeout`` told; the code's own outcome then lands nowhere."""
    # heartbeating() spelled out: this runs once per job on the Worker's hot path.
    entry = BEATS.add(job, beat_interval(job), job._request_cancel)
    alarm = None if timeout is None else BEATS.alarm(timeout, _time_out(job, timeout, on_timeout))
    token = _CURRENT.set(job)
    value: object = None
    try:
        try:
            value = fn(job)
        except Exception as exc:
            error: BaseException | None = exc
        else:
            error = None
        finally:
            _CURRENT.reset(token)
            if alarm is not None:
                BEATS.remove(alarm)
        return settle(job, error, ack, entry, on_retry, value if results else None)
    finally:
        BEATS.remove(entry)


async def run_async(
    job: JobHandle,
    fn: Callable[[JobHandle], Awaitable[Any]],
    on_retry: OnRetry | None = None,
    timeout: float | None = None,
    results: bool = False,
) -> Outcome:
    """The asyncio twin of :func:`run_sync`; database calls leave the loop free.

    Past ``timeout`` the code is cancelled and the job retried; a job
    cancelled by another party has its code cancelled and ends ``cancelled``.
    Cancelled from outside while ``fn`` runs (a Worker's shutdown), it gives
    the job back (pending at once, attempt refunded) before re-raising:
    nobody would settle it otherwise, and it would sit leased to nobody until
    the lease lapsed.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None

    def gone() -> None:  # on the timetable's thread
        job._request_cancel()
        loop.call_soon_threadsafe(task.cancel)

    entry = BEATS.add(job, beat_interval(job), gone)
    token = _CURRENT.set(job)
    value: object = None
    try:
        error: BaseException | None = None
        try:
            async with asyncio.timeout(timeout) as limit:
                value = await fn(job)
        except TimeoutError as exc:
            error = TimedOut(timeout) if timeout is not None and limit.expired() else exc
        except asyncio.CancelledError:
            if job.cancel_requested:
                task.uncancel()  # this task asked for it: what follows is not cancelled
                return "cancelled"
            # A second cancellation stops this wait, not the release.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(loop.run_in_executor(None, release, job))
            raise
        except Exception as exc:
            error = exc
        finally:
            _CURRENT.reset(token)
        kept = value if results else None
        return await loop.run_in_executor(None, settle, job, error, None, entry, on_retry, kept)
    finally:
        BEATS.remove(entry)
