"""sweep_expired: expiry to dead, retention purge, per-queue, concurrent-safe (SPEC §4.4, §4.6)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import alkstore


def swept(s: alkstore.Swept) -> tuple[int, int]:
    return (s.expired, s.purged)


def test_expired_pending_and_processing_go_dead(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=1000)
    held = q.enqueue("held", expires=60)
    waiting = q.enqueue("waiting", expires=60)
    forever = q.enqueue("forever")
    h = q.claim("w")
    assert h is not None and h.id == held
    assert swept(q.sweep_expired()) == (0, 0)
    store._advance_clock(60)
    assert q.sweep_expired() == alkstore.Swept(expired=2, purged=0)
    for job_id in (held, waiting):
        job = q.get_job(job_id)
        assert job is not None
        assert (job.state, job.last_error) == ("dead", "expired")
    live = q.get_job(forever)
    assert live is not None and live.state == "pending"
    assert h.ack() is False
    assert swept(q.sweep_expired()) == (0, 0)
    s = q.stats()
    assert (s.pending, s.processing, s.dead) == (1, 0, 2)


def test_expiry_not_reached_is_kept(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({}, expires=60)
    store._advance_clock(55)
    assert swept(q.sweep_expired()) == (0, 0)
    job = q.get_job(job_id)
    assert job is not None and job.state == "pending"


def test_expired_processing_valid_until_swept(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=1000)
    job_id = q.enqueue({}, expires=10)
    h = q.claim("w")
    assert h is not None
    store._advance_clock(20)
    assert h.heartbeat() is True  # past expires_at, yet still the holder's
    assert swept(q.sweep_expired()) == (1, 0)
    assert h.heartbeat() is False
    job = q.get_job(job_id)
    assert job is not None and job.state == "dead" and job.last_error == "expired"


def test_retention_purges_old_dead_rows(store: alkstore.Store) -> None:
    q = store.queue("q", dead_letter_retention_s=10)
    job_id = q.enqueue({})
    h = q.claim("w")
    assert h is not None and h.fail("x")
    store._advance_clock(5)
    assert swept(q.sweep_expired()) == (0, 0)
    assert q.get_job(job_id) is not None
    store._advance_clock(6)
    assert swept(q.sweep_expired()) == (0, 1)
    assert q.get_job(job_id) is None
    assert q.stats().dead == 0
    assert q.dead_jobs() == []


def test_expired_then_purged(store: alkstore.Store) -> None:
    q = store.queue("q", dead_letter_retention_s=100)
    job_id = q.enqueue({}, expires=10)
    store._advance_clock(10)
    assert swept(q.sweep_expired()) == (1, 0)
    store._advance_clock(101)
    assert swept(q.sweep_expired()) == (0, 1)
    assert q.get_job(job_id) is None


def test_retention_is_stamped_per_job(store: alkstore.Store) -> None:
    short = store.queue("q", dead_letter_retention_s=10)
    keep = store.queue("q")  # None: keep forever
    a = short.enqueue("a")
    b = keep.enqueue("b")
    for h in short.claim_batch("w", 2):
        assert h.fail("x")
    store._advance_clock(10**6)
    assert swept(keep.sweep_expired()) == (0, 1)
    assert keep.get_job(a) is None
    job = keep.get_job(b)
    assert job is not None and job.state == "dead"


def test_retention_none_keeps_forever(store: alkstore.Store) -> None:
    q = store.queue("q", dead_letter_retention_s=None)
    job_id = q.enqueue({})
    h = q.claim("w")
    assert h is not None and h.fail("x")
    store._advance_clock(10**8)
    assert swept(q.sweep_expired()) == (0, 0)
    job = q.get_job(job_id)
    assert job is not None and job.state == "dead"


def test_sweep_touches_only_this_queue(store: alkstore.Store) -> None:
    a = store.queue("a", dead_letter_retention_s=1)
    b = store.queue("b", dead_letter_retention_s=1)
    a_exp = a.enqueue({}, expires=5)
    b_exp = b.enqueue({}, expires=5)
    b_dead = b.enqueue({})
    h = b.claim("w")
    assert h is not None and h.id == b_exp
    b_dead_h = b.claim("w")
    assert b_dead_h is not None and b_dead_h.id == b_dead and b_dead_h.fail("x")
    store._advance_clock(10)
    assert swept(a.sweep_expired()) == (1, 0)
    job = b.get_job(b_exp)
    assert job is not None and job.state == "processing"
    assert b.get_job(b_dead) is not None
    assert swept(b.sweep_expired()) == (1, 1)
    dead_a = a.get_job(a_exp)
    assert dead_a is not None and dead_a.state == "dead"


def test_concurrent_sweeps_never_double_count(store_factory: Callable[..., alkstore.Store]) -> None:
    n = 60
    first = store_factory()
    second = store_factory()
    ids = first.queue("q").enqueue_many([{"i": i} for i in range(n)], expires=5)
    for s in (first, second):
        s._advance_clock(6)
    totals: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(4)

    def sweeper(s: alkstore.Store) -> None:
        q = s.queue("q")
        try:
            barrier.wait(10)
            for _ in range(3):
                got = q.sweep_expired()
                with lock:
                    totals.append(got.expired)
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=sweeper, args=(s,)) for s in (first, second, first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert sum(totals) == n
    q = first.queue("q")
    assert q.stats().dead == n
    assert {j.id for j in q.dead_jobs(limit=1000)} == set(ids)
