"""Claiming: order, batches, readiness, reclaim and exhaustion (SPEC §4.2, §4.3).

Clock shifts use ``store._advance_clock``. The database clock keeps ticking
while a test runs, so every "not yet" check stays at least one second short of
its threshold and every "now" check reaches it (the clock only moves forward).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

import alkstore

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer


def test_claim_empty_returns_none(store: alkstore.Store) -> None:
    q = store.queue("q")
    assert q.claim("w") is None
    assert q.claim_batch("w", 10, timeout=0) == []


def test_claim_never_waits_by_default(store: alkstore.Store) -> None:
    q = store.queue("q")
    started = time.monotonic()
    assert q.claim("w") is None
    assert time.monotonic() - started < 1.0


def test_order_priority_then_run_at_then_id(store: alkstore.Store) -> None:
    q = store.queue("q")
    past = int(time.time()) - 1000
    low = q.enqueue("low", priority=-1)
    fifo1 = q.enqueue("fifo1")
    fifo2 = q.enqueue("fifo2")
    older = q.enqueue("older", run_at=past)
    oldest = q.enqueue("oldest", run_at=past - 500)
    high = q.enqueue("high", priority=10)
    high_older = q.enqueue("high-older", priority=10, run_at=past)
    expected = [high_older, high, oldest, older, fifo1, fifo2, low]
    got = []
    while (h := q.claim("w")) is not None:
        got.append(h.id)
    assert got == expected


def test_claim_batch_respects_order(store: alkstore.Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many(list(range(6)))
    top = q.enqueue("top", priority=5)
    batch = q.claim_batch("w", 4)
    assert [h.id for h in batch] == [top, *ids[:3]]


def test_claim_sets_lease_fields(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=42, max_attempts=4)
    job_id = q.enqueue({"p": 1}, priority=3, expires=3600)
    h = q.claim("worker-1")
    assert h is not None
    assert isinstance(h.id, int) and h.id == job_id
    assert h.queue == "q"
    assert h.payload == {"p": 1}
    assert (h.attempts, h.max_attempts, h.priority) == (1, 4, 3)
    assert h.worker_id == "worker-1"
    for ts in (h.enqueued_at, h.run_at, h.claimed_at, h.deadline, h.expires_at):
        assert ts is not None
        assert ts.tzinfo is not None and ts.utcoffset() == timedelta(0)
        assert ts.microsecond == 0
    assert h.enqueued_at <= h.run_at <= h.claimed_at
    assert h.deadline - h.claimed_at == timedelta(seconds=42)
    assert h.expires_at is not None and h.expires_at - h.enqueued_at == timedelta(seconds=3600)
    assert abs(h.claimed_at - datetime.now(UTC)) < timedelta(seconds=60)
    job = q.get_job(job_id)
    assert job is not None
    assert job.state == "processing"
    assert (job.attempts, job.worker_id, job.claimed_at, job.deadline) == (
        1,
        "worker-1",
        h.claimed_at,
        h.deadline,
    )


def test_handle_without_expiry(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue({})
    h = q.claim("w")
    assert h is not None and h.expires_at is None


@pytest.mark.parametrize("n", [0, -1, 1001])
def test_claim_batch_bounds(store: alkstore.Store, n: int) -> None:
    q = store.queue("q")
    q.enqueue({})
    with pytest.raises(ValueError):
        q.claim_batch("w", n)
    stats = q.stats()
    assert (stats.pending, stats.processing) == (1, 0)


def test_claim_batch_up_to_n(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue_many(list(range(5)))
    first = q.claim_batch("w", 3)
    second = q.claim_batch("w", 10)
    assert len(first) == 3 and len(second) == 2
    assert len({h.id for h in first + second}) == 5
    assert q.claim_batch("w", 1000, timeout=0) == []


def test_claim_batch_max_n(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue_many(list(range(1001)))
    assert len(q.claim_batch("w", 1000)) == 1000
    assert len(q.claim_batch("w", 1000)) == 1


def test_delayed_job_claimable_after_clock_advance(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({}, delay=60)
    assert q.claim("w") is None
    store._advance_clock(55)
    assert q.claim("w") is None
    store._advance_clock(5)
    h = q.claim("w")
    assert h is not None and h.id == job_id


def test_reclaim_after_lapse_eats_an_attempt(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=30, max_attempts=3)
    job_id = q.enqueue({})
    first = q.claim("w1")
    assert first is not None and first.attempts == 1
    store._advance_clock(25)
    assert q.claim("w2") is None  # lease still running
    store._advance_clock(6)  # now > deadline
    second = q.claim("w2")
    assert second is not None
    assert (second.id, second.attempts, second.worker_id) == (job_id, 2, "w2")
    assert not first.ack()
    assert not first.retry("late")
    assert not first.fail("late")
    assert not first.heartbeat()
    assert not first.release()
    job = q.get_job(job_id)
    assert job is not None and (job.state, job.attempts, job.worker_id) == ("processing", 2, "w2")
    assert second.ack()
    assert q.get_job(job_id) is None


def test_lapsed_row_keeps_run_at_in_order(store: alkstore.Store) -> None:
    """A reclaim competes with its original ready time, ahead of younger pending rows."""
    q = store.queue("q", visibility_timeout_s=10)
    old = q.enqueue("old")
    assert q.claim("w1") is not None
    store._advance_clock(11)
    young = q.enqueue("young")
    h = q.claim("w2")
    assert h is not None and h.id == old
    h2 = q.claim("w2")
    assert h2 is not None and h2.id == young


def test_exhaustion_by_reclaim(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10, max_attempts=2)
    job_id = q.enqueue({"x": 1})
    assert q.claim("w") is not None
    store._advance_clock(11)
    h = q.claim("w")
    assert h is not None and h.attempts == 2
    store._advance_clock(11)
    assert q.claim("w") is None
    job = q.get_job(job_id)
    assert job is not None
    assert job.state == "dead"
    assert job.last_error == "attempts exhausted"
    assert job.attempts == 2
    assert job.payload == {"x": 1}
    assert not h.ack()
    stats = q.stats()
    assert (stats.processing, stats.dead) == (0, 1)


def test_exhaustion_goes_on_to_next_job(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10, max_attempts=1)
    spent = q.enqueue("spent", priority=5)
    assert q.claim("w") is not None
    store._advance_clock(11)
    fresh = q.enqueue("fresh")
    h = q.claim("w")
    assert h is not None and h.id == fresh
    job = q.get_job(spent)
    assert job is not None and job.state == "dead" and job.last_error == "attempts exhausted"


@pytest.mark.parametrize("at_expiry", [0, 50])
def test_a_lapsed_and_expired_job_dies_as_expired_like_a_sweep(store: alkstore.Store, at_expiry: int) -> None:
    """The claim's exhaustion step and a sweep agree on a job that is both spent and expired."""
    q = store.queue("q", visibility_timeout_s=10, max_attempts=1)
    sq = store.queue("q2", visibility_timeout_s=10, max_attempts=1)
    both = q.enqueue("both", expires=30)
    by_sweep = sq.enqueue("both", expires=30)
    assert q.claim("w") is not None and sq.claim("w") is not None
    store._advance_clock(30 + at_expiry)  # past the lease (10 s) and at or past expires_at (30 s)
    assert q.claim("w") is None  # its exhaustion step moves the job
    assert sq.sweep_expired().expired == 1
    claimed_dead, swept_dead = q.get_job(both), sq.get_job(by_sweep)
    assert claimed_dead is not None and swept_dead is not None
    assert claimed_dead.state == swept_dead.state == "dead"
    assert claimed_dead.last_error == swept_dead.last_error == "expired"
    assert claimed_dead.attempts == swept_dead.attempts == 1
    assert q.stats().dead == 1 and q.stats().processing == 0


def test_a_lapsed_spent_job_not_yet_expired_still_dies_as_exhausted(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10, max_attempts=1)
    job_id = q.enqueue("spent", expires=3600)
    assert q.claim("w") is not None
    store._advance_clock(11)
    assert q.claim("w") is None
    job = q.get_job(job_id)
    assert job is not None and job.state == "dead" and job.last_error == "attempts exhausted"


def test_expired_job_not_claimable(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({}, expires=60)
    later = q.enqueue({}, expires=600)
    store._advance_clock(60)  # now >= expires_at: past it
    h = q.claim("w")
    assert h is not None and h.id == later
    assert q.claim("w") is None
    job = q.get_job(job_id)
    assert job is not None and job.state == "pending"


def test_expiry_not_reached_is_claimable(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({}, expires=60)
    store._advance_clock(55)
    h = q.claim("w")
    assert h is not None and h.id == job_id


def test_expired_lapsed_row_not_reclaimed(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10, max_attempts=5)
    job_id = q.enqueue({}, expires=30)
    assert q.claim("w1") is not None
    store._advance_clock(31)
    assert q.claim("w2") is None
    job = q.get_job(job_id)
    assert job is not None and job.attempts == 1


def test_claims_touch_only_their_queue(store: alkstore.Store) -> None:
    a, b = store.queue("a"), store.queue("b")
    a_id = a.enqueue("a")
    assert b.claim("w") is None
    assert b.claim_batch("w", 10, timeout=0) == []
    h = a.claim("w")
    assert h is not None and h.id == a_id


def test_lapsed_rows_reclaimed_in_priority_order(store: alkstore.Store) -> None:
    """Reclaims follow the same order as fresh claims: priority first, not lease deadline."""
    q = store.queue("q", visibility_timeout_s=10)
    low = q.enqueue("low", priority=0)
    assert q.claim("w") is not None  # low: the earlier deadline
    store._advance_clock(3)
    high = q.enqueue("high", priority=5)
    assert q.claim("w") is not None  # high: the later deadline
    store._advance_clock(20)  # both leases lapsed
    first = q.claim("w2")
    second = q.claim("w2")
    assert first is not None and second is not None
    assert (first.id, second.id) == (high, low)


def test_lapsed_rows_reclaimed_in_run_at_order(store: alkstore.Store) -> None:
    """Among equal priorities a lapsed row competes with its run_at, not its deadline."""
    q = store.queue("q", visibility_timeout_s=10)
    past = int(time.time()) - 1000
    young = q.enqueue("young")
    assert q.claim("w") is not None  # young: the earlier deadline
    store._advance_clock(3)
    old = q.enqueue("old", run_at=past)
    assert q.claim("w") is not None  # old: the later deadline
    store._advance_clock(20)
    got = q.claim_batch("w2", 1)
    assert [h.id for h in got] == [old]
    rest = q.claim("w2")
    assert rest is not None and rest.id == young


def test_lapsed_and_pending_mixed_batch_order(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10)
    lapsed_low = q.enqueue("lapsed-low", priority=1)
    assert q.claim("w") is not None
    store._advance_clock(3)
    lapsed_high = q.enqueue("lapsed-high", priority=9)
    assert q.claim("w") is not None
    store._advance_clock(20)
    pending_mid = q.enqueue("pending-mid", priority=5)
    got = q.claim_batch("w2", 2)
    assert [h.id for h in got] == [lapsed_high, pending_mid]
    rest = q.claim("w2")
    assert rest is not None and rest.id == lapsed_low
