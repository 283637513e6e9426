"""One bound for every duration and instant a caller passes (ADR 0011, SPEC §13).

A duration is at most 100 years (3,155,760,000 s, after rounding up); an
absolute time is at most 9999-12-31T23:59:59Z. Beyond that: a ValueError naming
the argument, on both engines alike, before anything is written. At the bound
every timestamp the store hands back is a valid `datetime`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import alkstore
from tests.conftest import Target
from tests.workers import running, wait_for

#: 100 years of 365.25 days: the longest duration any argument takes.
MAX_S = 3_155_760_000
#: 9999-12-31T23:59:59Z: the latest absolute time (`run_at`) a job can have.
MAX_AT = 253_402_300_799

#: Over the bound, from just over it to far beyond what a float can turn into
#: an i64 or a Rust `Duration` (those used to panic).
TOO_LONG = [MAX_S + 1, MAX_S + 0.5, 1e12, sys.maxsize, 2**64, 1e19, 1e20, 1e300]
TOO_LONG_IDS = ["bound+1", "bound+0.5", "1e12", "maxsize", "2**64", "1e19", "1e20", "1e300"]


def claimed(store: alkstore.Store) -> alkstore.JobHandle:
    q = store.queue("held")
    q.enqueue({})
    h = q.claim("w")
    assert h is not None
    return h


def aclaim(q: alkstore.Queue, **kw: Any) -> Any:
    async def main() -> Any:
        return await q.aclaim("w", **kw)

    return asyncio.run(main())


#: (the argument's name, a call passing `value` as it)
DURATION_ARGS: list[tuple[str, Callable[[alkstore.Store, Any], object]]] = [
    ("visibility_timeout_s", lambda s, v: s.queue("q", visibility_timeout_s=v)),
    ("backoff_base_s", lambda s, v: s.queue("q", backoff_base_s=v)),
    ("dead_letter_retention_s", lambda s, v: s.queue("q", dead_letter_retention_s=v)),
    ("visibility_timeout_s", lambda s, v: s.outbox("o", visibility_timeout_s=v)),
    ("delay", lambda s, v: s.queue("q").enqueue({}, delay=v)),
    ("delay", lambda s, v: s.queue("q").enqueue_many([{}], delay=v)),
    ("expires", lambda s, v: s.queue("q").enqueue({}, expires=v)),
    ("expires", lambda s, v: s.schedule("s", "@every 1m", "q", expires=v)),
    ("delay", lambda s, v: claimed(s).retry("x", delay=v)),
    ("extend", lambda s, v: claimed(s).heartbeat(extend=v)),
    ("ttl_s", lambda s, v: s.lock("l", v)),
    ("timeout", lambda s, v: s.queue("q").claim("w", timeout=v)),
    ("timeout", lambda s, v: s.queue("q").claim_batch("w", 2, timeout=v)),
    ("timeout", lambda s, v: aclaim(s.queue("q"), timeout=v)),
    ("base_s", lambda s, v: alkstore.backoff_range(1, v)),
]
DURATION_IDS = [
    "visibility_timeout_s",
    "backoff_base_s",
    "dead_letter_retention_s",
    "outbox-visibility_timeout_s",
    "enqueue-delay",
    "enqueue_many-delay",
    "enqueue-expires",
    "schedule-expires",
    "retry-delay",
    "heartbeat-extend",
    "lock-ttl_s",
    "claim-timeout",
    "claim_batch-timeout",
    "aclaim-timeout",
    "backoff_range-base_s",
]


def nothing_written(store: alkstore.Store) -> None:
    assert store.queue("q").stats() == alkstore.QueueStats(pending=0, scheduled=0, processing=0, dead=0)
    assert store.schedules() == []


@pytest.mark.parametrize(("arg", "call"), DURATION_ARGS, ids=DURATION_IDS)
def test_every_duration_over_the_bound_is_a_value_error(
    store: alkstore.Store, arg: str, call: Callable[[alkstore.Store, Any], object]
) -> None:
    for value in TOO_LONG:
        with pytest.raises(ValueError, match=arg):
            call(store, value)
        nothing_written(store)


@pytest.mark.parametrize("value", TOO_LONG, ids=TOO_LONG_IDS)
def test_visibility_timeout_too_long_refused_before_a_stuck_claim(store: alkstore.Store, value: Any) -> None:
    """Used to be accepted: SQLite's claim overflowed the deadline to REAL and
    left the job processing forever; Postgres clamped it silently."""
    with pytest.raises(ValueError, match="visibility_timeout_s"):
        store.queue("q", visibility_timeout_s=value)


def test_timedelta_over_the_bound_is_a_value_error(store: alkstore.Store) -> None:
    q = store.queue("q")
    too_long = timedelta(seconds=MAX_S + 1)
    with pytest.raises(ValueError, match="delay"):
        q.enqueue({}, delay=too_long)
    with pytest.raises(ValueError, match="expires"):
        q.enqueue({}, expires=timedelta.max)
    with pytest.raises(ValueError, match="timeout"):
        q.claim("w", timeout=timedelta.max)
    with pytest.raises(ValueError, match="ttl_s"):
        store.lock("l", too_long)
    nothing_written(store)


def test_longest_lease_gives_datetimes(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=MAX_S, dead_letter_retention_s=MAX_S, backoff_base_s=MAX_S)
    job_id = q.enqueue({})
    h = q.claim("w")
    assert h is not None
    assert h.deadline - h.claimed_at == timedelta(seconds=MAX_S)
    job = q.get_job(job_id)
    assert job is not None and job.deadline == h.deadline
    assert h.heartbeat(extend=MAX_S)
    assert h.deadline - h.claimed_at >= timedelta(seconds=MAX_S)
    assert h.retry("later", delay=MAX_S)
    job = q.get_job(job_id)
    assert job is not None and job.run_at - job.enqueued_at >= timedelta(seconds=MAX_S)


def test_longest_delay_and_expiry_give_datetimes(store: alkstore.Store) -> None:
    q = store.queue("q")
    job = q.get_job(q.enqueue({}, delay=MAX_S, expires=timedelta(seconds=MAX_S)))
    assert job is not None and job.expires_at is not None
    assert job.run_at - job.enqueued_at == timedelta(seconds=MAX_S)
    assert job.expires_at - job.enqueued_at == timedelta(seconds=MAX_S)
    assert q.stats().scheduled == 1


def test_latest_run_at(store: alkstore.Store) -> None:
    q = store.queue("q")
    last = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    for when in (last, MAX_AT):
        job = q.get_job(q.enqueue({}, run_at=when))
        assert job is not None and job.run_at == last
    # The next second is year 10000, which no datetime can show.
    for too_late in (MAX_AT + 1, MAX_AT + 0.5, 1e12, 1e19, sys.maxsize, 1e300):
        with pytest.raises(ValueError, match="run_at"):
            q.enqueue({}, run_at=too_late)
    assert q.stats().scheduled == 2


def test_claim_timeout_at_the_bound_waits(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    h = q.claim("w", timeout=MAX_S)
    assert h is not None and h.id == job_id
    stop = alkstore.StopToken()
    stop.stop()
    assert q.claim("w", timeout=MAX_S, stop=stop) is None


def test_worker_runs_a_job_with_the_longest_lease(store: alkstore.Store) -> None:
    """A Worker heartbeats every third of the lease: 100 years still fits its waits."""
    q = store.queue("q", visibility_timeout_s=MAX_S)
    job_id = q.enqueue({"n": 1})
    seen: list[int] = []
    worker = alkstore.Worker(store, concurrency=1, worker_id="w")

    @worker.handler("q")
    def handle(payload: dict[str, int], job: alkstore.JobHandle) -> None:
        seen.append(payload["n"])

    with running(worker):
        wait_for(lambda: worker.counts.acked == 1, what="the job to be acked")
    assert seen == [1] and q.get_job(job_id) is None


@pytest.mark.parametrize("value", [MAX_S + 1, 1e12, 1e20, 1e300], ids=["bound+1", "1e12", "1e20", "1e300"])
def test_poll_interval_over_the_bound_refused_at_open(target: Target, value: float) -> None:
    """`open(poll_interval_s=1e20)` used to open, then panic at the first wait."""
    with pytest.raises(ValueError, match="poll_interval_s"):
        target.open(poll_interval_s=value)


def test_poll_interval_at_the_bound_waits(target: Target) -> None:
    with target.open(poll_interval_s=MAX_S) as store:
        q = store.queue("q")
        assert q.claim("w", timeout=0.2) is None
        q.enqueue({})
        assert q.claim("w", timeout=5) is not None
