"""Numeric arguments across the whole Python surface (SPEC §12, §13).

Every int argument refuses `bool` with a TypeError naming it, and an int beyond
its range is a ValueError naming it (never a bare OverflowError). No call
panics (PanicException) whatever number it is given: it works or raises a
TypeError / ValueError, and whatever it accepted reads back as valid datetimes.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
from collections.abc import Callable
from typing import Any

import pytest

import alkstore
from tests.conftest import Target

Call = Callable[[alkstore.Store, Any], object]


def aclaim_batch(q: alkstore.Queue, n: Any) -> list[alkstore.JobHandle]:
    async def main() -> list[alkstore.JobHandle]:
        return await q.aclaim_batch("w", n)

    return asyncio.run(main())


#: (the argument's name, a call passing `value` as it)
INT_ARGS: list[tuple[str, Call]] = [
    ("job_id", lambda s, v: s.queue("q").get_job(v)),
    ("job_id", lambda s, v: s.queue("q").cancel(v)),
    ("n", lambda s, v: s.queue("q").claim_batch("w", v)),
    ("n", lambda s, v: aclaim_batch(s.queue("q"), v)),
    ("batch", lambda s, v: s.queue("q").jobs("w", batch=v)),
    ("limit", lambda s, v: s.queue("q").dead_jobs(v)),
    ("before_id", lambda s, v: s.queue("q").dead_jobs(100, v)),
    ("limit", lambda s, v: s.queue("q").live_jobs(v)),
    ("before_id", lambda s, v: s.queue("q").live_jobs(100, v)),
    ("priority", lambda s, v: s.queue("q").enqueue({}, priority=v)),
    ("max_attempts", lambda s, v: s.queue("q").enqueue({}, max_attempts=v)),
    ("max_attempts", lambda s, v: s.queue("q", max_attempts=v)),
    ("priority", lambda s, v: s.schedule("s", "@every 1m", "q", priority=v)),
    ("max_attempts", lambda s, v: s.schedule("s", "@every 1m", "q", max_attempts=v)),
    ("n", lambda s, v: s.outbox("o").claim_batch("w", v)),
    ("after", lambda s, v: s.stream("e").read(v)),
    ("limit", lambda s, v: s.stream("e").read(0, v)),
    ("offset", lambda s, v: s.stream("e").save_offset("c", v)),
    ("offset", lambda s, v: s.stream("e").trim_to(v)),
    ("batch", lambda s, v: s.stream("e").subscribe("c", batch=v)),
    ("attempt", lambda s, v: alkstore.backoff_range(v, 5)),
    ("pending", lambda s, v: alkstore.QueueStats(pending=v, scheduled=0, processing=0, dead=0)),
    (
        "oldest_ready_age_s",
        lambda s, v: alkstore.QueueStats(pending=0, scheduled=0, processing=0, dead=0, oldest_ready_age_s=v),
    ),
    ("purged", lambda s, v: alkstore.Swept(0, v)),
]
INT_IDS = [
    "get_job",
    "cancel",
    "claim_batch",
    "aclaim_batch",
    "jobs",
    "dead_jobs-limit",
    "dead_jobs-before_id",
    "live_jobs-limit",
    "live_jobs-before_id",
    "enqueue-priority",
    "enqueue-max_attempts",
    "queue-max_attempts",
    "schedule-priority",
    "schedule-max_attempts",
    "outbox-claim_batch",
    "read-after",
    "read-limit",
    "save_offset",
    "trim_to",
    "subscribe-batch",
    "backoff_range",
    "QueueStats",
    "QueueStats-age",
    "Swept",
]


def untouched(store: alkstore.Store, job_id: int) -> None:
    """The job every test starts with is still pending and never claimed."""
    job = store.queue("q").get_job(job_id)
    assert job is not None and (job.state, job.attempts) == ("pending", 0)
    assert store.schedules() == []
    assert store.stream("e").get_offset("c") == 0


@pytest.mark.parametrize(("arg", "call"), INT_ARGS, ids=INT_IDS)
def test_int_argument_refuses_bool(store: alkstore.Store, arg: str, call: Call) -> None:
    """`q.cancel(True)` used to delete job 1."""
    job_id = store.queue("q").enqueue({})
    assert job_id == 1
    for value in (True, False):
        with pytest.raises(TypeError, match=arg):
            call(store, value)
    untouched(store, job_id)


@pytest.mark.parametrize(("arg", "call"), INT_ARGS, ids=INT_IDS)
def test_int_argument_beyond_its_range_is_a_value_error(store: alkstore.Store, arg: str, call: Call) -> None:
    """Ints beyond 64 bits used to raise a bare OverflowError, naming nothing."""
    job_id = store.queue("q").enqueue({})
    for value in (2**63, -(2**63) - 1, 2**64, -(2**100)):
        with pytest.raises(ValueError, match=arg):
            call(store, value)
    untouched(store, job_id)


def test_backoff_range_base_refuses_bool() -> None:
    with pytest.raises(TypeError, match="base_s"):
        alkstore.backoff_range(1, True)


def open_options(target: Target) -> list[str]:
    engine_only = ["pool_size"] if target.engine == "postgres" else ["busy_timeout_ms", "watch_interval_ms"]
    return ["max_payload_bytes", *engine_only]


def test_open_int_options(target: Target) -> None:
    for option in open_options(target):
        with pytest.raises(TypeError, match=option):
            target.open(**{option: True})
        with pytest.raises(TypeError, match=option):
            target.open(**{option: "5"})
        for too_big in (2**64, -(2**70)):
            with pytest.raises(ValueError, match=option):
                target.open(**{option: too_big})
    with pytest.raises(TypeError, match="poll_interval_s"):
        target.open(poll_interval_s=True)
    with pytest.raises(TypeError, match="poll_interval_s"):
        target.open(poll_interval_s="1")


# --- no call panics -------------------------------------------------------------

#: Every kind of number a caller might pass by mistake.
EXTREMES: list[object] = [
    0,
    -1,
    0.5,
    -0.5,
    2,
    1e300,
    -1e300,
    1e19,
    -1e19,
    sys.maxsize,
    -sys.maxsize - 1,
    2**64,
    -(2**64),
    2**1000,
    math.nan,
    math.inf,
    -math.inf,
    True,
]


def stopped() -> alkstore.StopToken:
    token = alkstore.StopToken()
    token.stop()
    return token


def handle(s: alkstore.Store) -> alkstore.JobHandle:
    q = s.queue("q")
    q.enqueue({})
    h = q.claim("w")
    assert h is not None
    return h


def claim_after(s: alkstore.Store, **queue_options: Any) -> object:
    """Enqueues and claims through a queue with these options: the claim stamps a deadline."""
    q = s.queue("q", **queue_options)
    q.enqueue({})
    h = q.claim("w")
    assert h is not None
    h.heartbeat()
    return h.retry("again")


def aclaim_timeout(s: alkstore.Store, v: Any) -> object:
    q = s.queue("q")
    q.enqueue({})  # so an accepted timeout returns at once

    async def main() -> object:
        return await q.aclaim("w", timeout=v)

    return asyncio.run(main())


def lock_for(s: alkstore.Store, v: Any) -> None:
    with s.lock("l", v):
        pass


NUMBER_CALLS: list[tuple[str, Call]] = [
    ("queue-visibility_timeout_s", lambda s, v: claim_after(s, visibility_timeout_s=v)),
    ("queue-max_attempts", lambda s, v: claim_after(s, max_attempts=v)),
    ("queue-backoff_base_s", lambda s, v: claim_after(s, backoff_base_s=v)),
    ("queue-dead_letter_retention_s", lambda s, v: claim_after(s, dead_letter_retention_s=v)),
    ("enqueue-delay", lambda s, v: s.queue("q").enqueue({}, delay=v)),
    ("enqueue-run_at", lambda s, v: s.queue("q").enqueue({}, run_at=v)),
    ("enqueue-expires", lambda s, v: s.queue("q").enqueue({}, expires=v)),
    ("enqueue-priority", lambda s, v: s.queue("q").enqueue({}, priority=v)),
    ("enqueue-max_attempts", lambda s, v: s.queue("q").enqueue({}, max_attempts=v)),
    ("enqueue_many-delay", lambda s, v: s.queue("q").enqueue_many([{}], delay=v)),
    ("claim-timeout", lambda s, v: s.queue("q").claim("w", timeout=v, stop=stopped())),
    ("claim_batch-n", lambda s, v: s.queue("q").claim_batch("w", v)),
    ("claim_batch-timeout", lambda s, v: s.queue("q").claim_batch("w", 3, timeout=v, stop=stopped())),
    ("aclaim-timeout", aclaim_timeout),
    ("jobs-batch", lambda s, v: s.queue("q").jobs("w", batch=v)),
    ("get_job", lambda s, v: s.queue("q").get_job(v)),
    ("cancel", lambda s, v: s.queue("q").cancel(v)),
    ("dead_jobs", lambda s, v: s.queue("q").dead_jobs(v, v)),
    ("live_jobs", lambda s, v: s.queue("q").live_jobs(v, v)),
    ("retry-delay", lambda s, v: handle(s).retry("x", delay=v)),
    ("heartbeat-extend", lambda s, v: handle(s).heartbeat(extend=v)),
    ("lock-ttl_s", lock_for),
    ("schedule-expires", lambda s, v: s.schedule("s", "@every 1m", "q", expires=v)),
    ("schedule-priority", lambda s, v: s.schedule("s", "@every 1m", "q", priority=v)),
    ("stream-read", lambda s, v: s.stream("e").read(v, v)),
    ("stream-save_offset", lambda s, v: s.stream("e").save_offset("c", v)),
    ("stream-trim_to", lambda s, v: s.stream("e").trim_to(v)),
    ("stream-subscribe", lambda s, v: s.stream("e").subscribe("c", batch=v)),
    ("stop-wait", lambda s, v: stopped().wait(v)),
    ("backoff_range-attempt", lambda s, v: alkstore.backoff_range(v, 5)),
    ("backoff_range-base_s", lambda s, v: alkstore.backoff_range(3, v)),
]


def read_back(store: alkstore.Store) -> None:
    """Every timestamp of every job and schedule converts to a datetime."""
    q = store.queue("q")
    for job in [*q.live_jobs(1000), *q.dead_jobs(1000)]:
        for field in ("enqueued_at", "run_at", "claimed_at", "deadline", "expires_at", "died_at"):
            getattr(job, field)
    for schedule in store.schedules():
        assert schedule.next_fire_at is not None


@pytest.mark.parametrize(("what", "call"), NUMBER_CALLS, ids=[w for w, _ in NUMBER_CALLS])
def test_no_call_panics_on_any_number(store: alkstore.Store, what: str, call: Call) -> None:
    """`claim(timeout=1e19)` used to raise PanicException (a BaseException)."""
    for value in EXTREMES:
        with contextlib.suppress(TypeError, ValueError):
            call(store, value)
        read_back(store)


@pytest.mark.parametrize(
    "option", ["poll_interval_s", "max_payload_bytes", "watch_interval_ms", "busy_timeout_ms", "pool_size"]
)
def test_no_open_option_panics_on_any_number(target: Target, option: str) -> None:
    for value in EXTREMES:
        try:
            s = target.open(**{option: value})
        # busy_timeout_ms=0 does not wait at all, so the previous handle's
        # closing checkpoint may still hold the file: an honest DatabaseError.
        except (TypeError, ValueError, alkstore.DatabaseError):
            continue
        with s:
            s.queue("q").claim("w", timeout=0.05)
