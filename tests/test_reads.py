"""get_job, dead_jobs, stats and cancel (SPEC §4.4, §4.6)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

import alkstore


def test_get_job_never_claimed(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=4)
    job_id = q.enqueue({"a": [1, 2]}, priority=2)
    job = q.get_job(job_id)
    assert job is not None
    assert (job.id, job.queue, job.state) == (job_id, "q", "pending")
    assert job.payload == {"a": [1, 2]}
    assert (job.priority, job.attempts, job.max_attempts) == (2, 0, 4)
    assert job.claimed_at is None and job.deadline is None and job.worker_id is None
    assert job.expires_at is None and job.last_error is None and job.died_at is None
    assert job.enqueued_at.utcoffset() == timedelta(0)
    assert job.run_at == job.enqueued_at


def test_get_job_unknown_and_other_queue(store: alkstore.Store) -> None:
    a, b = store.queue("a"), store.queue("b")
    job_id = a.enqueue({})
    assert b.get_job(job_id) is None
    assert a.get_job(job_id + 1000) is None
    handle = a.claim("w")
    assert handle is not None and handle.fail("x")
    assert b.get_job(job_id) is None  # dead rows too are per queue


def test_job_repr_and_frozen(store: alkstore.Store) -> None:
    q = store.queue("reprq")
    job_id = q.enqueue({})
    job = q.get_job(job_id)
    assert job is not None
    text = repr(job)
    assert str(job_id) in text and "reprq" in text and "pending" in text
    with pytest.raises((AttributeError, dataclasses.FrozenInstanceError)):
        job.state = "dead"  # type: ignore[misc]
    assert q.get_job(job_id) == job  # compared by value, like a dataclass


def test_dead_row_keeps_fields(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=60, max_attempts=3)
    job_id = q.enqueue({"keep": "me"}, priority=4, expires=3600)
    h = q.claim("worker-9")
    assert h is not None and h.fail("bad")
    job = q.get_job(job_id)
    assert job is not None
    assert (job.id, job.queue, job.state) == (job_id, "q", "dead")
    assert job.payload == {"keep": "me"}
    assert (job.priority, job.attempts, job.max_attempts) == (4, 1, 3)
    assert (job.enqueued_at, job.run_at, job.claimed_at) == (h.enqueued_at, h.run_at, h.claimed_at)
    assert (job.deadline, job.worker_id, job.expires_at) == (h.deadline, "worker-9", h.expires_at)
    assert job.last_error == "bad"
    assert job.died_at is not None and h.claimed_at <= job.died_at <= h.claimed_at + timedelta(seconds=2)
    assert "dead" in repr(job)


def test_died_at_follows_clock(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=1000)
    job_id = q.enqueue({})
    h = q.claim("w")
    assert h is not None
    store._advance_clock(100)
    assert h.fail("late")
    job = q.get_job(job_id)
    assert job is not None and job.died_at is not None
    assert 100 <= (job.died_at - h.claimed_at).total_seconds() <= 102


def make_dead(q: alkstore.Queue, n: int) -> list[int]:
    ids = q.enqueue_many([{"i": i} for i in range(n)])
    for h in q.claim_batch("w", n):
        assert h.fail(f"e{h.payload['i']}")
    return ids


def test_dead_jobs_newest_first_and_paging(store: alkstore.Store) -> None:
    q = store.queue("q")
    ids = make_dead(q, 7)
    newest_first = sorted(ids, reverse=True)
    all_dead = q.dead_jobs()
    assert [j.id for j in all_dead] == newest_first
    assert all(j.state == "dead" and j.last_error == f"e{j.payload['i']}" for j in all_dead)
    assert [j.id for j in q.dead_jobs(limit=3)] == newest_first[:3]
    assert [j.id for j in q.dead_jobs(limit=3, before_id=newest_first[2])] == newest_first[3:6]
    assert [j.id for j in q.dead_jobs(before_id=newest_first[-1])] == []
    assert [j.id for j in q.dead_jobs(limit=1000, before_id=newest_first[0] + 1)] == newest_first


def test_dead_jobs_only_this_queue(store: alkstore.Store) -> None:
    a, b = store.queue("a"), store.queue("b")
    make_dead(a, 2)
    assert b.dead_jobs() == []
    assert len(a.dead_jobs()) == 2


@pytest.mark.parametrize("limit", [0, -1, 1001])
def test_dead_jobs_limit_bounds(store: alkstore.Store, limit: int) -> None:
    with pytest.raises(ValueError):
        store.queue("q").dead_jobs(limit=limit)


def test_stats_counts(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10)
    s = q.stats()
    assert (s.pending, s.scheduled, s.processing, s.dead, s.oldest_ready_age_s) == (0, 0, 0, 0, None)
    gone = q.enqueue("dies")
    h = q.claim("w")
    assert h is not None and h.id == gone and h.fail("x")
    q.enqueue("a")
    q.enqueue("b")
    q.enqueue("later", delay=100)
    assert q.claim("w") is not None
    s = q.stats()
    assert (s.pending, s.scheduled, s.processing, s.dead) == (1, 1, 1, 1)
    assert isinstance(s.oldest_ready_age_s, int) and 0 <= s.oldest_ready_age_s <= 2
    store._advance_clock(30)  # the lease lapses but still counts as processing
    s = q.stats()
    assert (s.pending, s.scheduled, s.processing, s.dead) == (1, 1, 1, 1)
    assert s.oldest_ready_age_s is not None and 30 <= s.oldest_ready_age_s <= 32
    store._advance_clock(80)  # the delayed job becomes ready
    s = q.stats()
    assert (s.pending, s.scheduled, s.processing, s.dead) == (2, 0, 1, 1)
    assert s.oldest_ready_age_s is not None and 110 <= s.oldest_ready_age_s <= 112


def test_stats_age_counts_from_ready_time(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue({}, delay=50)
    store._advance_clock(80)
    s = q.stats()
    assert s.pending == 1 and s.oldest_ready_age_s is not None
    assert 30 <= s.oldest_ready_age_s <= 32


def test_stats_counts_unswept_expired_as_pending(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue({}, expires=10)
    store._advance_clock(20)
    s = q.stats()
    assert (s.pending, s.dead) == (1, 0)
    assert q.claim("w") is None


def test_stats_only_this_queue(store: alkstore.Store) -> None:
    a, b = store.queue("a"), store.queue("b")
    a.enqueue_many([1, 2, 3])
    s = b.stats()
    assert (s.pending, s.scheduled, s.processing, s.dead, s.oldest_ready_age_s) == (0, 0, 0, 0, None)


def test_cancel_pending_and_processing(store: alkstore.Store) -> None:
    q = store.queue("q")
    pending = q.enqueue("p")
    processing = q.enqueue("x")
    h = q.claim("w")
    assert h is not None and h.id == pending
    assert q.cancel(pending) is True
    assert q.cancel(processing) is True
    assert q.get_job(pending) is None and q.get_job(processing) is None
    s = q.stats()
    assert (s.pending, s.processing, s.dead) == (0, 0, 0)
    assert q.dead_jobs() == []
    assert q.cancel(pending) is False


def test_cancel_unknown_dead_and_other_queue(store: alkstore.Store) -> None:
    a, b = store.queue("a"), store.queue("b")
    job_id = a.enqueue({})
    assert a.cancel(job_id + 1000) is False
    assert b.cancel(job_id) is False
    assert a.get_job(job_id) is not None
    h = a.claim("w")
    assert h is not None and h.fail("dead")
    assert a.cancel(job_id) is False  # dead rows are not cancelled
    job = a.get_job(job_id)
    assert job is not None and job.state == "dead"


# --- a pending job holds no lease (SPEC §4.4) --------------------------------


@pytest.mark.parametrize("back_to_pending", ["retry now", "retry later", "release"])
def test_a_job_back_to_pending_reads_without_a_lease(store: alkstore.Store, back_to_pending: str) -> None:
    """After retry or release: worker_id and deadline are None; claimed_at keeps the last claim."""
    q = store.queue("q", visibility_timeout_s=300, max_attempts=5)
    job_id = q.enqueue({"n": 1})
    h = q.claim("w1")
    assert h is not None
    leased = q.get_job(job_id)
    assert leased is not None and leased.worker_id == "w1" and leased.deadline is not None
    if back_to_pending == "release":
        assert h.release()
    else:
        assert h.retry("boom", delay=0 if back_to_pending == "retry now" else 60)
    for job in (q.get_job(job_id), *q.live_jobs()):
        assert job is not None and job.id == job_id
        assert job.state == "pending"
        assert job.worker_id is None
        assert job.deadline is None
        assert job.claimed_at == h.claimed_at == leased.claimed_at


@pytest.mark.parametrize("back_to_pending", ["retry", "release"])
def test_a_stale_handle_stays_fenced_after_its_job_went_back_to_pending(
    store: alkstore.Store, back_to_pending: str
) -> None:
    """The claim token, not worker_id, keeps an earlier handle of the same worker out."""
    q = store.queue("q", visibility_timeout_s=300, max_attempts=5)
    job_id = q.enqueue({})
    old = q.claim("w")
    assert old is not None
    assert old.retry("again", delay=0) if back_to_pending == "retry" else old.release()
    # Pending, no lease: the old handle can do nothing.
    assert not old.heartbeat()
    assert not old.ack()
    assert not old.release()
    assert not old.retry("x", delay=0)
    assert not old.fail("x")
    new = q.claim("w")  # the same worker id claims it again
    assert new is not None and new.id == job_id
    assert not old.ack() and not old.heartbeat() and not old.fail("x")
    job = q.get_job(job_id)
    assert (
        job is not None
        and job.state == "processing"
        and job.worker_id == "w"
        and job.deadline == new.deadline
    )
    assert new.ack()
    assert q.get_job(job_id) is None


def test_a_dead_job_keeps_the_lease_it_died_with(store: alkstore.Store) -> None:
    """Retry at budget moves the processing row to dead as it was: the lease fields stay."""
    q = store.queue("q", max_attempts=1)
    job_id = q.enqueue({})
    h = q.claim("w")
    assert h is not None and h.retry("last try")
    dead = q.get_job(job_id)
    assert dead is not None and dead.state == "dead"
    assert dead.worker_id == "w" and dead.deadline == h.deadline and dead.claimed_at == h.claimed_at
