"""The asyncio bridge on both engines: a cancelled wait never leaves a job
claimed for nobody, and an awaited claim inside a transaction is refused
like the blocking one (SPEC §5, §6).

Cancelling right after the task started is the hard case: the wait thread
is about to make its first claim, and before the fix that claim landed
after the cancellation and was dropped — the job stayed `processing` with
no holder, and with `max_attempts=1` it died unrun at its reclaim.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

import alkstore
from alkstore import JobHandle, Store

ROUNDS = 20


def assert_nothing_held(q: alkstore.Queue | alkstore.Outbox, total: int, handed: int) -> None:
    """Every job not handed to the caller is pending again with its attempt refunded."""
    s = q.stats()
    assert s.processing == 0, f"{s.processing} job(s) claimed for nobody"
    assert s.pending == total - handed
    for job in q.claim_batch("check", 1000):
        assert job.attempts == 1, f"job {job.id} lost an attempt to a cancelled claim"


def handed_out(result: Any) -> int:
    """How many jobs a finished (not cancelled) claim task gave its caller; acks them."""
    jobs = result if isinstance(result, list) else [result]
    got = [j for j in jobs if isinstance(j, JobHandle)]
    for j in got:
        assert j.ack()
    return len(got)


async def jobs_handed_out(task: asyncio.Future[Any]) -> int:
    """Awaits a task that was just cancelled: the jobs it still handed out (if the
    cancellation came too late), or 0."""
    try:
        return handed_out(await task)
    except asyncio.CancelledError:
        return 0


async def cancel_soon(coro: Any) -> int:
    """Starts `coro`, lets it reach its wait thread, cancels it; returns jobs it still handed out."""
    task = asyncio.ensure_future(coro)
    await asyncio.sleep(0)  # the task starts its wait thread and awaits it
    task.cancel()
    return await jobs_handed_out(task)


@pytest.mark.parametrize("timeout", [0, 5, None], ids=["timeout0", "timeout5", "forever"])
@pytest.mark.parametrize("batch", [False, True], ids=["aclaim", "aclaim_batch"])
def test_cancelled_aclaim_leaves_no_job_claimed(store: Store, timeout: float | None, batch: bool) -> None:
    q = store.queue("q", max_attempts=1)
    q.enqueue_many(list(range(ROUNDS)))

    async def main() -> int:
        handed = 0
        for _ in range(ROUNDS):
            coro = q.aclaim_batch("w", 5, timeout=timeout) if batch else q.aclaim("w", timeout=timeout)
            handed += await cancel_soon(coro)
        return handed

    handed = asyncio.run(main())
    assert_nothing_held(q, ROUNDS, handed)


def test_a_claim_landing_as_its_task_is_cancelled_is_given_back(store: Store) -> None:
    """The claim has landed (the row is processing) and its result is on its way to
    the loop when the task is cancelled: the bridge gives it back."""
    q = store.queue("q", max_attempts=1)
    q.enqueue_many(list(range(ROUNDS)))

    async def main() -> int:
        handed = 0
        for _ in range(ROUNDS):
            before = q.stats().processing
            task = asyncio.ensure_future(q.aclaim("w", timeout=5))
            await asyncio.sleep(0)
            while q.stats().processing == before and not task.done():
                await asyncio.sleep(0)  # the wait thread claims; its result is not taken yet
            task.cancel()
            handed += await jobs_handed_out(task)
        return handed

    handed = asyncio.run(main())
    assert_nothing_held(q, ROUNDS, handed)


def test_cancelled_async_for_step_leaves_no_job_claimed(store: Store) -> None:
    """Cancelling one `__anext__` of a live iterator gives its claim back at once
    (the iterator stays usable: the next step claims again)."""
    q = store.queue("q", max_attempts=1)
    q.enqueue_many(list(range(ROUNDS)))
    it = q.jobs("w")

    async def main() -> int:
        handed = 0
        for _ in range(ROUNDS):
            handed += await cancel_soon(it.__anext__())
        return handed

    handed = asyncio.run(main())
    assert_nothing_held(q, ROUNDS, handed)


def test_adeliver_cancelled_by_its_task_group_leaves_no_message_claimed(store: Store) -> None:
    """A TaskGroup (here a timeout) cancelling `adeliver`: the relays waiting for a
    claim and the relays inside `send` both give their message back."""
    ob = store.outbox("hooks", max_attempts=1)
    for n in range(6):
        ob.enqueue(n)
    in_send: list[Any] = []

    async def main() -> None:
        blocked = asyncio.Event()  # never set
        four_in = asyncio.Event()

        async def send(payload: Any) -> None:
            in_send.append(payload)
            if len(in_send) == 4:
                four_in.set()
            await blocked.wait()  # a send that never completes

        async def deliver() -> None:
            await ob.adeliver(send, worker_id="relay", concurrency=4)

        task = asyncio.ensure_future(deliver())
        await asyncio.wait_for(four_in.wait(), 20)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(in_send) == 4
    assert_nothing_held(ob, 6, 0)


def test_adeliver_cancelled_while_starting_leaves_no_message_claimed(store: Store) -> None:
    ob = store.outbox("hooks", max_attempts=1)
    for n in range(ROUNDS):
        ob.enqueue(n)
    sent: list[Any] = []

    async def send(payload: Any) -> None:
        sent.append(payload)

    async def main() -> None:
        for _ in range(5):
            task = asyncio.ensure_future(ob.adeliver(send, worker_id="relay", concurrency=4))
            for _ in range(3):  # adeliver starts its relays, the relays start their waits
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(main())
    assert_nothing_held(ob, ROUNDS, len(sent))


# -- inside a transaction -------------------------------------------------------


def test_aclaim_inside_a_transaction_is_refused(store: Store) -> None:
    """The wait runs on a helper thread, which holds no transaction; the check must
    be made for the awaiting thread. Before: SQLite blocked forever on the writer
    the transaction holds; Postgres claimed outside the caller's transaction."""
    q = store.queue("q")
    job_id = q.enqueue({})

    async def main() -> None:
        with store.transaction():
            with pytest.raises(alkstore.TransactionError):
                await asyncio.wait_for(q.aclaim("w", timeout=1), 10)
            with pytest.raises(alkstore.TransactionError):
                await asyncio.wait_for(q.aclaim_batch("w", 5), 10)
            with pytest.raises(alkstore.TransactionError):
                await asyncio.wait_for(q.jobs("w").__anext__(), 10)

    asyncio.run(main())
    job = q.get_job(job_id)
    assert job is not None and job.state == "pending" and job.attempts == 0
