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

A settling call whose connection was lost mid-call (``ConnectionLost``) may
have committed before its reply was lost. When trying it again finds the job
no longer this handle's, the job's row tells what happened: gone after an ack,
dead after a fail, pending after a retry or a snooze — the outcome meant, which
most likely landed the first time — and anything else ``lost``. Never
``cancelled``: a job counts as cancelled only when its row was gone before any
settling call of ours could have removed it.

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
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from alkstore._aio import release
from alkstore._beats import BEATS, Entry, beat_interval, may_hold
from alkstore._core import JobHandle, _check_json
from alkstore._errors import ConnectionLost, DatabaseError, Fail, PayloadError, Retry, Snooze

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

#: ``timed_out``: a sync run went past its timeout, and its alarm (not the run)
#: settles the job and reports the outcome through ``on_timeout``.
Outcome = Literal["acked", "retried", "failed", "released", "snoozed", "cancelled", "lost", "timed_out"]

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
#: whether it landed, or None to fall back to ``job.ack()``. It raises
#: ``ConnectionLost`` when it may have landed without hearing so.
Ack = Callable[[JobHandle, Any], "bool | None"]

#: Called once per settle tried again after a transient error (the Worker counts them).
OnRetry = Callable[[], None]

#: Called on the timetable's thread when a sync run's timeout settled the job
#: while its thread runs on: the outcome the timeout gave it.
OnTimeout = Callable[[Outcome], None]


def _land(
    what: str,
    op: Callable[[], bool],
    job: JobHandle,
    beat: Entry | None,
    on_retry: OnRetry | None,
    unsure: bool = False,
) -> bool | None:
    """Runs the settling ``op``, again after each transient error while the
    lease may hold. True once it lands; False when it did not (the job is no
    longer this handle's, or the lease can no longer hold); None instead of
    False when a try was cut off with its outcome unknown (``ConnectionLost``,
    or ``unsure`` given: it may have landed)."""
    pause = _SETTLE_PAUSE_S
    tries = 0
    while True:
        try:
            landed = op()
        except DatabaseError as exc:
            if not exc.transient:
                raise
            unsure = unsure or isinstance(exc, ConnectionLost)
            if not may_hold(job, beat):
                log.error(
                    "job %d of %r: the %s failed (%s) until its lease could no longer hold; "
                    "it will run again once the lease lapses",
                    job.id,
                    job.queue,
                    what,
                    exc,
                )
                return None if unsure else False
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
        return True if landed else None if unsure else False


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
    landed: bool | None
    if error is None:
        kept = result_of(job, result) if result is not None and job._settled is None else None
        landed, unsure = None, False
        if ack is not None:
            try:
                landed = ack(job, kept)
            except ConnectionLost:  # it may have committed: the plain ack tries again
                unsure = True
        if landed is None:
            landed = _land("ack", _acking(job, kept), job, beat, on_retry, unsure)
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
    if landed is None:
        # One of our calls lost its reply, and may have committed: the row's
        # state now, not a cancel nobody asked for, says what happened.
        return _seen(job, outcome)
    if may_hold(job, beat) and _gone(job):
        job._request_cancel()
        return "cancelled"
    return "lost"


#: The job's state after each settling outcome landed (None: the row is gone).
_LANDED_AS: dict[Outcome, tuple[str | None, ...]] = {
    "acked": (None,),
    "failed": ("dead",),
    "retried": ("pending", "dead"),  # a retry at the last attempt goes dead
    "snoozed": ("pending",),
}


def _seen(job: JobHandle, meant: Outcome) -> Outcome:
    """The outcome of a settling call cut off with its outcome unknown, after
    trying it again found the job no longer this handle's: ``meant`` when the
    job's row shows it landed, else ``lost`` (another party, or a lapsed
    lease, took the job meanwhile; it may run again)."""
    try:
        state = job._state()
    except Exception:
        return "lost"  # the database is still away: we cannot tell
    if state in _LANDED_AS.get(meant, ()):
        log.warning(
            "job %d of %r: a settling call lost its reply; the job's row (%s) shows it landed: %s",
            job.id,
            job.queue,
            state or "gone",
            meant,
        )
        return meant
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


class _Alarm:
    """The alarm of a sync run's ``timeout``. Its thread cannot be stopped, so
    at the timeout the job is retried now (the handle is marked so cooperative
    code can stop) and whatever the thread does later lands nowhere.

    Either the run or the alarm settles the job, never both: each takes the
    one token first (:meth:`take`). A run that returns in time takes it and
    settles as usual; past the timeout the alarm has it, and the run leaves
    the job to it (``timed_out``), even while the alarm's retry is still on
    its way. The alarm reports through ``on_timeout``: ``retried``, or
    ``cancelled`` / ``lost`` when its retry could not land."""

    __slots__ = ("_job", "_on_timeout", "_seconds", "_token")

    def __init__(self, job: JobHandle, seconds: float, on_timeout: OnTimeout | None) -> None:
        self._job = job
        self._seconds = seconds
        self._on_timeout = on_timeout
        self._token = threading.Lock()

    def take(self) -> bool:
        """Whether the caller got to settle the job (first come, once)."""
        return self._token.acquire(blocking=False)

    def fire(self) -> None:
        """On the timetable's thread, at the timeout."""
        if not self.take():
            return  # the run finished in time and settles the job itself
        job, seconds = self._job, self._seconds
        job._request_cancel()
        outcome: Outcome
        try:
            landed = job.retry(str(TimedOut(seconds)))
        except Exception as exc:  # the lease is left to lapse, as after a crash
            log.warning("job %d of %r: timed out, and the retry failed: %s", job.id, job.queue, exc)
            outcome = "lost"
        else:
            if landed:
                log.warning("job %d of %r timed out after %g s; retried", job.id, job.queue, seconds)
                outcome = "retried"
            else:
                # No longer ours: the code settled it through its handle (that
                # counts), or another party cancelled it (the row is gone), or
                # the lease lapsed.
                done = _SETTLED.get(job._settled)
                outcome = done if done is not None else "cancelled" if _gone(job) else "lost"
        if self._on_timeout is not None:
            self._on_timeout(outcome)


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
    and ``on_timeout`` told its outcome; the code's own outcome then lands
    nowhere, and this returns ``timed_out``."""
    # heartbeating() spelled out: this runs once per job on the Worker's hot path.
    entry = BEATS.add(job, beat_interval(job), job._request_cancel)
    alarm = timer = None
    if timeout is not None:
        alarm = _Alarm(job, timeout, on_timeout)
        timer = BEATS.alarm(timeout, alarm.fire)
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
            if timer is not None:
                BEATS.remove(timer)
        if alarm is not None and not alarm.take():
            # The alarm fired first: the job is its to settle and report.
            log.debug("job %d of %r: past its timeout; its timeout's alarm settles it", job.id, job.queue)
            return "timed_out"
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
