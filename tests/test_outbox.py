"""The transactional outbox (SPEC §7) on both engines: commit-atomic enqueue,
the reserved backing queue, and the relay (`deliver` / `adeliver`) with
retries, dead letters, heartbeats, stop and close.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import alkstore
from alkstore import Outbox, Store
from tests.conftest import Target


@contextmanager
def relaying(
    ob: Outbox, send: Callable[[Any], object], **kwargs: Any
) -> Iterator[tuple[alkstore.StopToken, list[BaseException]]]:
    """Runs ob.deliver(send) on a thread for the block; stops and joins it after."""
    stop = alkstore.StopToken()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            ob.deliver(send, stop=stop, **kwargs)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    try:
        yield stop, errors
    finally:
        stop.stop()
        t.join(30)
        assert not t.is_alive(), "deliver did not return after stop"


def wait_until(cond: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("condition not met in time")
        time.sleep(0.02)


def empty(ob: Outbox) -> bool:
    s = ob.stats()
    return (s.pending, s.scheduled, s.processing, s.dead) == (0, 0, 0, 0)


# ---------------------------------------------------------------- producing
def test_enqueue_in_rolled_back_tx_leaves_nothing(store: Store) -> None:
    ob = store.outbox("hooks")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        job_id = ob.enqueue({"event": "order.created"}, tx=tx)
        assert ob.get_job(job_id, tx=tx) is not None
        raise RuntimeError("business write failed")
    assert ob.get_job(job_id) is None
    assert empty(ob)
    assert ob.claim("relay") is None


def test_committed_message_is_delivered(store: Store, target: Target) -> None:
    ob = store.outbox("hooks")
    table = target.table("orders")
    with store.transaction() as tx:
        tx.execute(f"CREATE TABLE {table} (id INTEGER)")
    with store.transaction() as tx:
        tx.execute(f"INSERT INTO {table} (id) VALUES (7)")
        ob.enqueue({"event": "order.created", "id": 7}, tx=tx)
    sent: list[Any] = []
    with relaying(ob, sent.append) as (_, errors):
        wait_until(lambda: len(sent) == 1)
        wait_until(lambda: empty(ob))
    assert errors == []
    assert sent == [{"event": "order.created", "id": 7}]


def test_backing_queue_name(store: Store) -> None:
    ob = store.outbox("hooks")
    job_id = ob.enqueue(1)
    job = ob.claim("relay")
    assert job is not None and job.id == job_id
    assert job.queue == "__alkstore_outbox:hooks"
    got = ob.get_job(job_id)
    assert got is not None and got.queue == "__alkstore_outbox:hooks"
    assert ob.name == "hooks"
    assert repr(ob) == "<alkstore.Outbox 'hooks'>"
    # Same name as a plain queue: separate rows.
    assert store.queue("hooks").claim("w") is None


@pytest.mark.parametrize("name", ["__alkstore_outbox:x", "__alkstore_outbox:hooks", "__alkstore"])
def test_store_queue_refuses_the_reserved_prefix(store: Store, name: str) -> None:
    with pytest.raises(alkstore.InvalidName):
        store.queue(name)


@pytest.mark.parametrize("name", ["", "x" * 201, "a\x00b", "__alkstore_x"])
def test_outbox_name_validated(store: Store, name: str) -> None:
    with pytest.raises(alkstore.InvalidName):
        store.outbox(name)


def test_outbox_options_validated_and_stamped(store: Store) -> None:
    with pytest.raises(ValueError):
        store.outbox("o", visibility_timeout_s=0)
    with pytest.raises(ValueError):
        store.outbox("o", max_attempts=0)
    ob = store.outbox("o", visibility_timeout_s=30, max_attempts=7)
    ob.enqueue(1, priority=5)
    job = ob.claim("relay")
    assert job is not None
    assert job.max_attempts == 7 and job.priority == 5
    assert (job.deadline - job.claimed_at).total_seconds() == 30


def test_outbox_delegates_the_queue_surface(store: Store) -> None:
    ob = store.outbox("o")
    ids = [ob.enqueue(i) for i in range(3)]
    ob.enqueue("later", delay=3600)
    ob.enqueue("expiring", expires=1)
    assert ob.stats().pending == 4 and ob.stats().scheduled == 1
    batch = ob.claim_batch("relay", 2)
    assert [j.id for j in batch] == ids[:2]
    assert batch[0].fail("nope")
    assert [j.id for j in ob.dead_jobs()] == [ids[0]]
    store._advance_clock(10)
    assert ob.sweep_expired().expired == 1
    stop = alkstore.StopToken()
    for job in ob.jobs("relay", stop=stop):
        assert job.id == ids[2]
        job.ack()
        stop.stop()


# ---------------------------------------------------------------- relaying
def test_failing_send_retries_then_dies_with_the_error(store: Store) -> None:
    ob = store.outbox("hooks", max_attempts=3, backoff_base_s=0)
    job_id = ob.enqueue({"to": "https://example.invalid"})
    calls: list[Any] = []

    def send(payload: Any) -> None:
        calls.append(payload)
        raise ConnectionError("endpoint down")

    with relaying(ob, send) as (_, errors):
        wait_until(lambda: ob.stats().dead == 1)
    assert errors == []
    assert len(calls) == 3
    dead = ob.get_job(job_id)
    assert dead is not None and dead.state == "dead" and dead.attempts == 3
    assert dead.last_error == repr(ConnectionError("endpoint down"))


def test_retry_uses_the_engine_curve(store: Store) -> None:
    ob = store.outbox("hooks", backoff_base_s=100)
    job_id = ob.enqueue(1)
    calls = 0

    def send(payload: Any) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("later")

    with relaying(ob, send):
        wait_until(lambda: ob.stats().scheduled == 1)
    job = ob.get_job(job_id)
    assert job is not None and job.state == "pending" and calls == 1
    lo, hi = alkstore.backoff_range(1, 100)
    delay = (job.run_at - job.claimed_at).total_seconds()  # type: ignore[operator]
    assert lo - 2 <= delay <= hi + 2


def test_slow_send_is_delivered_once(store: Store) -> None:
    """A send longer than the lease: heartbeats keep it, so a second relay
    thread never reclaims and re-sends it."""
    ob = store.outbox("hooks", visibility_timeout_s=2)
    ob.enqueue("slow")
    calls: list[Any] = []
    lock = threading.Lock()

    def send(payload: Any) -> None:
        with lock:
            calls.append(payload)
        time.sleep(5)

    with relaying(ob, send, concurrency=2) as (_, errors):
        wait_until(lambda: empty(ob), timeout=30)
        time.sleep(0.5)
    assert errors == []
    assert calls == ["slow"]


def test_concurrent_relays_deliver_each_message_once(store: Store) -> None:
    ob = store.outbox("hooks")
    ids = {ob.enqueue(i) for i in range(40)}
    sent: list[Any] = []
    lock = threading.Lock()

    def send(payload: Any) -> None:
        time.sleep(0.01)
        with lock:
            sent.append(payload)

    with relaying(ob, send, concurrency=4) as (_, errors):
        wait_until(lambda: empty(ob), timeout=60)
    assert errors == []
    assert sorted(sent) == list(range(40)) and len(ids) == 40


def test_deliver_ends_on_stop(store: Store) -> None:
    ob = store.outbox("hooks")
    stop = alkstore.StopToken()
    t = threading.Thread(target=ob.deliver, args=(print,), kwargs={"stop": stop})
    t.start()
    time.sleep(0.3)
    assert t.is_alive()
    stop.stop()
    t.join(10)
    assert not t.is_alive()


@pytest.mark.parametrize("concurrency", [1, 3])
def test_deliver_raises_store_closed_on_close(store: Store, concurrency: int) -> None:
    ob = store.outbox("hooks")
    errors: list[BaseException] = []

    def run() -> None:
        try:
            ob.deliver(print, concurrency=concurrency)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    store.close()
    t.join(10)
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], alkstore.StoreClosed)


def test_deliver_validates_concurrency(store: Store) -> None:
    ob = store.outbox("hooks")
    with pytest.raises(ValueError, match="concurrency"):
        ob.deliver(print, concurrency=0)
    with pytest.raises(TypeError, match="concurrency"):
        ob.deliver(print, concurrency=True)


def test_adeliver_in_an_event_loop(store: Store) -> None:
    ob = store.outbox("hooks", max_attempts=2, backoff_base_s=0)
    for i in range(3):
        ob.enqueue(i)
    ob.enqueue("bad")

    async def main() -> list[Any]:
        stop = alkstore.StopToken()
        sent: list[Any] = []

        async def send(payload: Any) -> None:
            await asyncio.sleep(0.01)
            if payload == "bad":
                raise ValueError("bad payload")
            sent.append(payload)

        relay = asyncio.create_task(ob.adeliver(send, stop=stop, concurrency=2))
        for _ in range(2000):
            if len(sent) == 3 and ob.stats().dead == 1:
                break
            await asyncio.sleep(0.01)
        stop.stop()
        await asyncio.wait_for(relay, 10)
        return sent

    assert sorted(asyncio.run(main())) == [0, 1, 2]
    dead = ob.dead_jobs()
    assert len(dead) == 1 and dead[0].last_error == repr(ValueError("bad payload"))


def test_adeliver_accepts_a_plain_function(store: Store) -> None:
    ob = store.outbox("hooks")
    ob.enqueue("x")
    sent: list[Any] = []

    async def main() -> None:
        stop = alkstore.StopToken()
        relay = asyncio.create_task(ob.adeliver(sent.append, stop=stop))
        for _ in range(1000):
            if sent:
                break
            await asyncio.sleep(0.01)
        stop.stop()
        await asyncio.wait_for(relay, 10)

    asyncio.run(main())
    assert sent == ["x"]


@pytest.mark.parametrize("send", [None, 42, "https://example.com/hook"], ids=["None", "int", "str"])
@pytest.mark.parametrize("concurrency", [1, 3])
def test_deliver_refuses_a_send_that_is_not_callable(store: Store, send: Any, concurrency: int) -> None:
    """A `TypeError` before anything is claimed (SPEC §7). Before: every message was
    claimed, "failed" with a TypeError and dead-lettered at `max_attempts`."""
    ob = store.outbox("hooks")
    job_id = ob.enqueue({"n": 1})
    stop = alkstore.StopToken()
    timer = threading.Timer(2, stop.stop)  # ends the relay, should it start
    timer.start()
    try:
        with pytest.raises(TypeError, match="send"):
            ob.deliver(send, stop=stop, concurrency=concurrency)
        with pytest.raises(TypeError, match="send"):
            asyncio.run(ob.adeliver(send, stop=stop, concurrency=concurrency))
    finally:
        timer.cancel()
    job = ob.get_job(job_id)
    assert job is not None and job.state == "pending" and job.attempts == 0
