"""`q.jobs(worker_id, batch=N)` on both engines: the jobs a batch claimed but the
caller never received go back to pending, attempt refunded, when the iterator
is closed, left through its context, or dropped; and a buffered handle whose
lease lapsed is never handed out (SPEC §4.2).

Before the fix, breaking out of the loop left the rest of the batch
`processing` until their leases lapsed, and the reclaims ate their attempts.
"""

from __future__ import annotations

import asyncio
import gc
import time

import pytest

import alkstore
from alkstore import Store

BATCH = 5


def assert_rest_pending(q: alkstore.Queue, ids: list[int], handed: int) -> None:
    """The `handed` jobs the caller acked are gone; every other one is pending, unspent."""
    s = q.stats()
    assert s.processing == 0, f"{s.processing} buffered job(s) still claimed"
    live = q.live_jobs(limit=1000)
    assert len(live) == len(ids) - handed
    assert all(j.state == "pending" and j.attempts == 0 for j in live)


def test_break_releases_the_unhanded_jobs(store: Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many(list(range(BATCH)))
    for job in q.jobs("w", batch=BATCH):
        assert job.ack()
        break
    assert_rest_pending(q, ids, 1)


def test_close_releases_the_unhanded_jobs_and_ends_the_iteration(store: Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many(list(range(BATCH)))
    it = q.jobs("w", batch=BATCH)
    first = next(it)
    it.close()
    assert first.ack(), "the handed-out job stays the caller's"
    assert_rest_pending(q, ids, 1)
    with pytest.raises(StopIteration):
        next(it)
    it.close()  # idempotent


def test_context_exit_releases_the_unhanded_jobs(store: Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many(list(range(BATCH)))
    with q.jobs("w", batch=BATCH) as it:
        assert next(it).ack()
        assert next(it).ack()
    assert_rest_pending(q, ids, 2)


def test_garbage_collection_releases_the_unhanded_jobs(store: Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many(list(range(BATCH)))
    it = q.jobs("w", batch=BATCH)
    assert next(it).ack()
    del it
    gc.collect()
    assert_rest_pending(q, ids, 1)


def test_async_for_break_and_aclose_release_the_unhanded_jobs(store: Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many(list(range(2 * BATCH)))

    async def main() -> None:
        async for job in q.jobs("w", batch=BATCH):
            assert job.ack()
            break
        it = q.jobs("w", batch=BATCH)
        assert (await it.__anext__()).ack()
        await it.aclose()
        with pytest.raises(StopAsyncIteration):
            await it.__anext__()

    asyncio.run(main())
    assert_rest_pending(q, ids, 2)


def test_close_inside_a_transaction_is_refused_and_keeps_the_jobs_for_later(store: Store) -> None:
    """A release cannot run in a thread holding a transaction (SPEC §6): `close()`
    says so instead of dropping the buffered jobs."""
    q = store.queue("q")
    ids = q.enqueue_many(list(range(BATCH)))
    it = q.jobs("w", batch=BATCH)
    assert next(it).ack()
    with store.transaction(), pytest.raises(alkstore.TransactionError):
        it.close()
    it.close()
    assert_rest_pending(q, ids, 1)


def test_a_buffered_handle_whose_lease_lapsed_is_not_handed_out(store: Store) -> None:
    """The iterator claims again instead, so the caller gets a valid lease."""
    q = store.queue("q", visibility_timeout_s=1)
    first_id, second_id = q.enqueue_many(["a", "b"])
    it = q.jobs("w", batch=2)
    first = next(it)
    assert first.id == first_id and first.ack()
    # Real time, not _advance_clock: the lease is one whole database second, so
    # after two seconds the buffered handle has lapsed whatever the phase.
    time.sleep(2.2)
    second = next(it)
    assert second.id == second_id
    assert second.ack(), "the handle handed out had a lapsed lease"
    it.close()
