"""Waiting consumers are woken by commits, deadlines, stop and close (SPEC §4.2, §5, §8 StopToken).

Real time, kept short: each bound is generous (seconds) so a loaded machine
does not fail it. Waiting stores are opened with a 60 s safety-net poll
(`poll_interval_s`), so a wake that arrives within seconds came from a commit
or a known deadline, not from the poll.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

import alkstore


@pytest.fixture
def waiter(store_factory: Callable[..., alkstore.Store]) -> alkstore.Store:
    """A store whose safety-net poll is too slow to pass any test here by itself."""
    return store_factory(poll_interval_s=60)


def later(seconds: float, fn: Callable[[], object]) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)
        fn()

    t = threading.Thread(target=run)
    t.start()
    return t


def test_claim_timeout_expires(store: alkstore.Store) -> None:
    q = store.queue("q")
    started = time.monotonic()
    assert q.claim("w", timeout=0.5) is None
    waited = time.monotonic() - started
    assert 0.4 <= waited < 5


@pytest.mark.parametrize("name", ["q", "x" * 200, 'it\'s "odd" ☃'], ids=["plain", "200-chars", "quotes"])
def test_claim_woken_by_commit(waiter: alkstore.Store, name: str) -> None:
    q = waiter.queue(name)
    t = later(0.3, lambda: q.enqueue({"wake": 1}))
    started = time.monotonic()
    h = q.claim("w", timeout=20)
    waited = time.monotonic() - started
    t.join(10)
    assert h is not None and h.payload == {"wake": 1}
    assert waited < 5


def test_claim_woken_by_other_handle(waiter: alkstore.Store, store: alkstore.Store) -> None:
    """A commit through another handle (another connection, like another process) wakes the waiter."""
    producer = store.queue("q")
    q = waiter.queue("q")
    t = later(0.3, lambda: producer.enqueue({"from": "other"}))
    started = time.monotonic()
    h = q.claim("w", timeout=20)
    t.join(10)
    assert h is not None and h.payload == {"from": "other"}
    assert time.monotonic() - started < 5


def test_claim_wakes_for_delayed_job(waiter: alkstore.Store) -> None:
    q = waiter.queue("q")
    job_id = q.enqueue({}, delay=1)
    started = time.monotonic()
    h = q.claim("w", timeout=20)
    assert h is not None and h.id == job_id
    assert time.monotonic() - started < 5


def test_claim_batch_returns_when_any_claimable(waiter: alkstore.Store) -> None:
    q = waiter.queue("q")
    t = later(0.3, lambda: q.enqueue_many([1, 2]))
    started = time.monotonic()
    got = q.claim_batch("w", 50, timeout=20)
    t.join(10)
    assert 1 <= len(got) <= 2
    assert time.monotonic() - started < 5


def test_claim_timeout_none_waits_for_a_job(waiter: alkstore.Store) -> None:
    """`timeout=None` waits until a job arrives (SPEC §4.2), unlike the default, which never waits."""
    q = waiter.queue("q")
    t = later(0.5, lambda: q.enqueue({"late": True}))
    h = q.claim("w", timeout=None)
    t.join(10)
    assert h is not None and h.payload == {"late": True}


@pytest.mark.parametrize("timeout", [30, None])
def test_close_interrupts_waiting_claim(waiter: alkstore.Store, timeout: float | None) -> None:
    q = waiter.queue("q")
    t = later(0.3, waiter.close)
    started = time.monotonic()
    with pytest.raises(alkstore.StoreClosed):
        q.claim("w", timeout=timeout)
    t.join(10)
    assert time.monotonic() - started < 5


def test_close_interrupts_jobs_iterator(waiter: alkstore.Store) -> None:
    q = waiter.queue("q")
    t = later(0.3, waiter.close)
    started = time.monotonic()
    with pytest.raises(alkstore.StoreClosed):
        for _ in q.jobs("w"):
            pass
    t.join(10)
    assert time.monotonic() - started < 5


def test_stop_token_basics() -> None:
    stop = alkstore.StopToken()

    def stopped() -> bool:
        return stop.stopped

    assert stopped() is False
    assert stop.wait(0.05) is False
    later(0.1, stop.stop)
    assert stop.wait(10) is True
    assert stopped() is True
    stop.stop()  # idempotent
    assert stop.wait(0) is True


def test_jobs_iterator_ends_on_stop(waiter: alkstore.Store) -> None:
    q = waiter.queue("q")
    ids = q.enqueue_many([1, 2, 3])
    stop = alkstore.StopToken()
    seen = []
    for h in q.jobs("w", stop=stop):
        seen.append(h.id)
        assert h.ack()
        if len(seen) == 3:
            later(0.2, stop.stop)
    assert seen == ids


def test_aclaim(waiter: alkstore.Store) -> None:
    q = waiter.queue("q")

    async def main() -> tuple[alkstore.JobHandle | None, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick = asyncio.create_task(ticker())
        later(0.3, lambda: q.enqueue({"async": True}))
        h = await q.aclaim("w", timeout=20)
        tick.cancel()
        return h, ticks

    h, ticks = asyncio.run(main())
    assert h is not None and h.payload == {"async": True}
    assert ticks >= 5  # the event loop kept running while the claim waited


def test_async_for_jobs(waiter: alkstore.Store) -> None:
    q = waiter.queue("q")
    ids = q.enqueue_many([1, 2, 3])
    stop = alkstore.StopToken()

    async def main() -> list[int]:
        seen = []
        async for h in q.jobs("w", stop=stop):
            seen.append(h.id)
            assert h.ack()
            if len(seen) == 3:
                stop.stop()
        return seen

    assert asyncio.run(main()) == ids


def test_aclaim_batch(waiter: alkstore.Store) -> None:
    q = waiter.queue("q")
    ids = q.enqueue_many([1, 2, 3])

    async def main() -> list[alkstore.JobHandle]:
        return await q.aclaim_batch("w", 10, timeout=5)

    got = asyncio.run(main())
    assert [h.id for h in got] == ids
