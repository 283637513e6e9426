"""Job handle operations and the validity predicate (SPEC §4.3, §4.5, §13)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import alkstore
from tests.conftest import PG_URL, Target, drop_schema, new_schema_name
from tests.workers import running, wait_for

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer


def claim_one(q: alkstore.Queue, worker: str = "w") -> alkstore.JobHandle:
    h = q.claim(worker)
    assert h is not None
    return h


def secs(d: timedelta) -> float:
    return d.total_seconds()


# --- ack -----------------------------------------------------------------------


def test_ack_deletes(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    h = claim_one(q)
    assert h.ack() is True
    assert q.get_job(job_id) is None
    assert q.stats().processing == 0


def test_ops_after_ack_return_false(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue({})
    h = claim_one(q)
    assert h.ack()
    assert h.ack() is False
    assert h.retry("x") is False
    assert h.fail("x") is False
    assert h.heartbeat() is False
    assert h.release() is False
    assert q.stats().dead == 0


def test_ops_after_cancel_return_false(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    h = claim_one(q)
    assert q.cancel(job_id) is True
    for op in (h.ack, h.heartbeat, h.release, lambda: h.retry("x"), lambda: h.fail("x")):
        assert op() is False
    assert q.get_job(job_id) is None
    assert q.stats().dead == 0


def test_ops_after_lapse_return_false_and_change_nothing(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10)
    job_id = q.enqueue({})
    h = claim_one(q)
    store._advance_clock(11)
    for op in (h.ack, h.heartbeat, h.release, lambda: h.retry("x"), lambda: h.fail("x")):
        assert op() is False
    job = q.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.deadline) == ("processing", 1, h.deadline)


def test_stale_handle_same_worker_refused(store: alkstore.Store) -> None:
    """The claim token fences an earlier claim by the same worker id."""
    q = store.queue("q")
    job_id = q.enqueue({})
    first = claim_one(q, "same")
    assert first.release()
    second = claim_one(q, "same")
    assert second.id == job_id and second.attempts == 1  # the release refunded the attempt
    assert first.ack() is False
    assert first.heartbeat() is False
    assert first.fail("stale") is False
    assert first.release() is False
    job = q.get_job(job_id)
    assert job is not None and job.state == "processing"
    assert second.ack() is True


def test_other_worker_handle_is_its_own(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10)
    q.enqueue({})
    a = claim_one(q, "a")
    store._advance_clock(11)
    b = claim_one(q, "b")
    assert a.ack() is False
    assert b.ack() is True


# --- heartbeat -------------------------------------------------------------------


def test_heartbeat_is_absolute(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=100)
    job_id = q.enqueue({})
    h = claim_one(q)
    assert h.heartbeat(extend=10) is True
    job = q.get_job(job_id)
    assert job is not None and job.deadline is not None
    # now + 10 (a second or two after the claim), not claimed_at + 100 + 10
    assert 10 <= secs(job.deadline - h.claimed_at) <= 12
    store._advance_clock(20)
    assert h.ack() is False


def test_heartbeat_default_is_stamped_timeout(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=30)
    job_id = q.enqueue({})
    h = claim_one(q)
    store._advance_clock(20)
    assert h.heartbeat() is True
    job = q.get_job(job_id)
    assert job is not None and job.deadline is not None
    assert 50 <= secs(job.deadline - h.claimed_at) <= 52
    store._advance_clock(25)  # past the original deadline, inside the renewed one
    assert h.ack() is True


def test_heartbeat_keeps_job_from_reclaim(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10)
    q.enqueue({})
    h = claim_one(q, "a")
    for _ in range(3):
        store._advance_clock(7)
        assert h.heartbeat() is True
        assert q.claim("b") is None
    assert h.ack() is True


def test_late_heartbeat_refused(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10)
    job_id = q.enqueue({})
    h = claim_one(q, "a")
    store._advance_clock(11)
    assert h.heartbeat() is False
    assert h.heartbeat(extend=1000) is False
    other = claim_one(q, "b")  # the lapsed lease was not stolen back
    assert other.id == job_id and other.attempts == 2


@pytest.mark.parametrize(("extend", "seconds"), [(0.2, 1), (1, 1), (1.5, 2), (timedelta(seconds=5), 5)])
def test_heartbeat_rounds_up(store: alkstore.Store, extend: float | timedelta, seconds: int) -> None:
    q = store.queue("q", visibility_timeout_s=100)
    job_id = q.enqueue({})
    h = claim_one(q)
    assert h.heartbeat(extend=extend) is True
    job = q.get_job(job_id)
    assert job is not None and job.deadline is not None
    assert seconds <= secs(job.deadline - h.claimed_at) <= seconds + 2


@pytest.mark.parametrize("extend", [0, -1, -0.5])
def test_heartbeat_extend_too_small(store: alkstore.Store, extend: float) -> None:
    q = store.queue("q", visibility_timeout_s=100)
    job_id = q.enqueue({})
    h = claim_one(q)
    with pytest.raises(ValueError):
        h.heartbeat(extend=extend)
    job = q.get_job(job_id)
    assert job is not None and job.deadline == h.deadline
    assert h.ack() is True


# --- retry -------------------------------------------------------------------------


def test_retry_explicit_delay(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=3)
    job_id = q.enqueue({})
    h = claim_one(q)
    assert h.retry("boom", delay=30) is True
    job = q.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts) == ("pending", 1)
    assert job.last_error == "boom"  # its last failure (SPEC §30)
    assert job.died_at is None  # dead rows only
    assert 30 <= secs(job.run_at - h.claimed_at) <= 32
    assert q.claim("w") is None
    store._advance_clock(33)
    again = claim_one(q)
    assert (again.id, again.attempts) == (job_id, 2)


@pytest.mark.parametrize(("delay", "seconds"), [(0, 0), (0.3, 1), (timedelta(seconds=7), 7)])
def test_retry_delay_forms(store: alkstore.Store, delay: float | timedelta, seconds: int) -> None:
    q = store.queue("q", backoff_base_s=1000)
    job_id = q.enqueue({})
    h = claim_one(q)
    assert h.retry("x", delay=delay) is True
    job = q.get_job(job_id)
    assert job is not None
    assert seconds <= secs(job.run_at - h.claimed_at) <= seconds + 2


def test_retry_negative_delay_refused(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    h = claim_one(q)
    with pytest.raises(ValueError):
        h.retry("x", delay=-1)
    job = q.get_job(job_id)
    assert job is not None and job.state == "processing"


@pytest.mark.parametrize("base", [0, 0.5, 5, 100])
def test_retry_default_delay_on_curve(store: alkstore.Store, base: float) -> None:
    q = store.queue("q", backoff_base_s=base, max_attempts=10, visibility_timeout_s=10)
    job_id = q.enqueue({})
    for attempt in (1, 2, 3):
        h = claim_one(q)
        assert h.attempts == attempt
        assert h.retry("again") is True
        job = q.get_job(job_id)
        assert job is not None and job.state == "pending"
        lo, hi = alkstore.backoff_range(attempt, base)
        waited = secs(job.run_at - h.claimed_at)
        assert lo <= waited <= hi + 2, (attempt, waited, lo, hi)
        store._advance_clock(hi + 3)


def test_retry_at_budget_goes_dead(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=2, visibility_timeout_s=10)
    job_id = q.enqueue({"k": "v"})
    assert claim_one(q).retry("first", delay=0)
    h = claim_one(q)
    assert h.attempts == 2
    assert h.retry("second") is True
    job = q.get_job(job_id)
    assert job is not None
    assert (job.state, job.last_error, job.attempts) == ("dead", "second", 2)
    assert job.payload == {"k": "v"}
    assert job.died_at is not None
    assert q.claim("w") is None
    assert h.retry("again") is False


def test_fail_goes_dead(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=5)
    job_id = q.enqueue({})
    h = claim_one(q)
    assert h.fail("broken input") is True
    job = q.get_job(job_id)
    assert job is not None
    assert (job.state, job.last_error, job.attempts) == ("dead", "broken input", 1)
    assert h.fail("again") is False
    assert q.stats().dead == 1


def test_fail_default_error_is_empty(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    assert claim_one(q).fail() is True
    job = q.get_job(job_id)
    assert job is not None and job.last_error == ""


# --- release -----------------------------------------------------------------------


def test_release_refunds_attempt(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=1)
    job_id = q.enqueue({})
    h = claim_one(q)
    assert h.release() is True
    job = q.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts) == ("pending", 0)
    assert 0 <= secs(job.run_at - h.claimed_at) <= 2
    again = claim_one(q)  # still within budget: the attempt was refunded
    assert (again.id, again.attempts) == (job_id, 1)
    assert h.release() is False


# --- with job: ---------------------------------------------------------------------


def test_with_acks_on_normal_exit(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    h = claim_one(q)
    with h as entered:
        assert entered is h
    assert q.get_job(job_id) is None


def test_with_retries_on_exception(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=3, backoff_base_s=0)
    job_id = q.enqueue({})
    h = claim_one(q)
    with pytest.raises(KeyError), h:
        raise KeyError("missing")
    job = q.get_job(job_id)
    assert job is not None and (job.state, job.attempts) == ("pending", 1)


def test_with_records_repr_of_exception(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=1)
    job_id = q.enqueue({})
    h = claim_one(q)
    exc = RuntimeError("went 'wrong'")
    with pytest.raises(RuntimeError) as raised, h:
        raise exc
    assert raised.value is exc
    job = q.get_job(job_id)
    assert job is not None
    assert (job.state, job.last_error) == ("dead", repr(exc))


# --- ack_batch -----------------------------------------------------------------------


def test_ack_batch_counts_valid_handles(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=100)
    ids = q.enqueue_many(list(range(5)))
    hs = q.claim_batch("w", 5)
    assert [h.id for h in hs] == ids
    assert hs[0].ack()  # already acked
    assert q.cancel(hs[1].id)  # cancelled
    assert hs[2].release()  # released: stale handle
    assert q.ack_batch(hs) == 2
    assert q.get_job(ids[3]) is None and q.get_job(ids[4]) is None
    job = q.get_job(ids[2])
    assert job is not None and job.state == "pending"
    assert q.ack_batch(hs) == 0


def test_ack_batch_lapsed_and_empty(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=10)
    q.enqueue_many([1, 2])
    hs = q.claim_batch("w", 2)
    assert q.ack_batch([]) == 0
    store._advance_clock(11)
    assert q.ack_batch(hs) == 0
    assert q.stats().processing == 2


def test_ack_batch_duplicates_count_once(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue({})
    h = claim_one(q)
    assert q.ack_batch([h, h]) == 1


@pytest.fixture
def other_store(target: Target, tmp_path: Path) -> Iterator[alkstore.Store]:
    """A store on a second, separate database of the same engine."""
    if target.engine == "sqlite":
        with alkstore.open(tmp_path / "other.db") as other:
            yield other
        return
    schema = new_schema_name()
    try:
        with alkstore.open(PG_URL, schema=schema) as other:
            yield other
    finally:
        drop_schema(schema)


def test_ack_batch_refuses_handles_of_another_store(
    store: alkstore.Store, other_store: alkstore.Store
) -> None:
    """A handle from another store can match this store's row by id, worker and
    claim token; it used to delete this store's job. Refused: nothing is acked."""
    mine, theirs = store.queue("q"), other_store.queue("q")
    job_id = mine.enqueue("mine")
    assert theirs.enqueue("theirs") == job_id
    h_mine, h_theirs = claim_one(mine), claim_one(theirs)
    for batch in ([h_theirs], [h_mine, h_theirs]):
        with pytest.raises(ValueError, match="another store"):
            mine.ack_batch(batch)
    for q in (mine, theirs):
        job = q.get_job(job_id)
        assert job is not None and job.state == "processing"
    assert store.queue("q").ack_batch([h_mine]) == 1  # another Queue object of the same store is fine
    assert mine.get_job(job_id) is None


def test_ack_batch_refuses_what_is_not_a_handle(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue({})
    h = claim_one(q)
    with pytest.raises(TypeError, match="jobs"):
        q.ack_batch([h, "1"])  # type: ignore[list-item]
    assert q.stats().processing == 1


# --- the curve -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempt", "base", "expected"),
    [
        (1, 5, (3, 5)),
        (2, 5, (5, 10)),
        (3, 5, (10, 20)),
        (11, 5, (1800, 3600)),
        (20, 5, (1800, 3600)),
        (1000, 5, (1800, 3600)),
        (1, 0, (0, 0)),
        (5, 0, (0, 0)),
        (1, 0.5, (0, 0)),
        (2, 0.5, (1, 1)),
        (1, 1, (1, 1)),
        (1, 7, (4, 7)),
        (1, 2.5, (2, 2)),
        (1, 3600, (1800, 3600)),
        (1, 100000, (1800, 3600)),
    ],
)
def test_backoff_range(attempt: int, base: float, expected: tuple[int, int]) -> None:
    assert alkstore.backoff_range(attempt, base) == expected


# --- error texts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    ["", "plain", "ünïcødé ☃ 𝄞", "é" * 4096, "multi\nline\ttext", "quote ' and \" and \\"],
    ids=["empty", "plain", "unicode", "at-the-bound", "whitespace", "quotes"],
)
def test_last_error_round_trips(store: alkstore.Store, error: str) -> None:
    q = store.queue("q", max_attempts=1)
    failed, retried = q.enqueue_many([1, 2])
    h1, h2 = q.claim_batch("w", 2)
    assert h1.fail(error) is True
    assert h2.retry(error) is True  # at budget: dead with this error
    for job_id in (failed, retried):
        job = q.get_job(job_id)
        assert job is not None and job.state == "dead" and job.last_error == error


#: The most UTF-8 bytes a stored error keeps (docs/queues.md, issue 44).
MAX_ERROR_BYTES = 8192


def test_a_longer_error_is_cut_not_refused(store: alkstore.Store) -> None:
    """A failing handler's error is recorded whatever its size: past 8 KiB its
    start and end are kept around a marker, cut at character boundaries."""
    q = store.queue("q", max_attempts=1)
    failed, retried = q.enqueue_many([1, 2])
    h1, h2 = q.claim_batch("w", 2)
    error = "Traceback: " + "☃" * 20_000 + " ValueError: the end"
    assert h1.fail(error) is True
    assert h2.retry(error) is True
    for job_id in (failed, retried):
        job = q.get_job(job_id)
        assert job is not None and job.last_error is not None
        kept = job.last_error
        assert len(kept.encode()) <= MAX_ERROR_BYTES < len(error.encode())
        assert kept.startswith("Traceback: ☃") and kept.endswith("☃ ValueError: the end")
        assert f"[an error of {len(error.encode())} bytes, cut to {MAX_ERROR_BYTES}]" in kept


def test_a_workers_huge_exception_is_recorded_cut_and_the_worker_goes_on(store: alkstore.Store) -> None:
    """The Worker stores ``repr()`` of what a handler raised: a 5 MB message is
    recorded (cut), the job is dead with it, and the next job runs."""
    worker = alkstore.Worker(store, concurrency=1)
    q = store.queue("q", max_attempts=1)
    huge, fine = q.enqueue_many([{"huge": True}, {"huge": False}])

    @worker.handler("q")
    def handle(payload: dict[str, bool], _job: alkstore.JobHandle) -> None:
        if payload["huge"]:
            raise ValueError("start " + "x" * 5_000_000 + " end")

    with running(worker):
        wait_for(lambda: worker.counts.dead == 1 and worker.counts.acked == 1)
    dead = q.get_job(huge)
    assert dead is not None and dead.state == "dead" and dead.last_error is not None
    assert len(dead.last_error.encode()) <= MAX_ERROR_BYTES
    assert dead.last_error.startswith("ValueError('start xxx") and dead.last_error.endswith("xxx end')")
    assert q.get_job(fine) is None, "acked"


@pytest.mark.parametrize("op", ["fail", "retry-at-budget"])
def test_nul_in_error_is_stored_or_refused_cleanly(store: alkstore.Store, op: str) -> None:
    """A NUL in an error text must not surface as a DatabaseError (Postgres text cannot hold
    NUL): either it is stored as given, or it is a plain ValueError that changes nothing."""
    q = store.queue("q", max_attempts=1)
    job_id = q.enqueue({})
    h = claim_one(q)
    error = "before\x00after"
    try:
        landed = h.fail(error) if op == "fail" else h.retry(error)
    except ValueError:
        job = q.get_job(job_id)
        assert job is not None and job.state == "processing"
        assert h.ack() is True  # the refused call left the handle valid
        return
    assert landed is True
    job = q.get_job(job_id)
    assert job is not None and job.state == "dead" and job.last_error == error
