"""Streams (SPEC §9): publish, read, consumer offsets, trim and subscribe, on both engines.

Multi-process properties (commit order, a killed subscriber) are in
test_stream_processes.py.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

import alkstore
from alkstore import Event, Store, Stream

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer


def offsets(events: list[Event]) -> list[int]:
    return [e.offset for e in events]


def collect(sub: alkstore.Subscription, n: int, stop: alkstore.StopToken | None = None) -> list[Event]:
    """The next n events of a subscription (then sets stop, if given, and asks once more)."""
    got: list[Event] = []
    for ev in sub:
        got.append(ev)
        if len(got) == n:
            if stop is None:
                break
            stop.stop()
    return got


# ---------------------------------------------------------------- publish / read
def test_publish_returns_increasing_offsets_read_in_order(store: Store) -> None:
    s = store.stream("orders")
    offs = [s.publish({"i": i}) for i in range(5)]
    assert offs == [1, 2, 3, 4, 5]
    events = s.read()
    assert offsets(events) == offs
    assert [e.payload for e in events] == [{"i": i} for i in range(5)]


def test_read_after_and_limit_bounds(store: Store) -> None:
    s = store.stream("s")
    for i in range(10):
        s.publish(i)
    assert offsets(s.read(after=3, limit=4)) == [4, 5, 6, 7]
    assert offsets(s.read(after=8)) == [9, 10]
    assert s.read(after=10) == []
    assert s.read(after=1000) == []
    assert offsets(s.read(0, 1)) == [1]
    assert len(s.read(limit=1000)) == 10
    for bad in (0, -1, 1001):
        with pytest.raises(ValueError, match="limit"):
            s.read(limit=bad)
    with pytest.raises(ValueError, match="after"):
        s.read(after=-1)
    with pytest.raises(TypeError):
        s.read(after=True)


def test_read_pages_through_more_than_a_thousand(store: Store) -> None:
    s = store.stream("big")
    with store.transaction() as tx:
        for i in range(2500):
            s.publish(i, tx=tx)
    seen: list[int] = []
    after = 0
    while page := s.read(after=after):
        assert len(page) <= 1000
        seen.extend(e.payload for e in page)
        after = page[-1].offset
    assert seen == list(range(2500))


def test_key_payload_and_time_round_trip(store: Store) -> None:
    s = store.stream("s")
    payloads: list[Any] = [
        None,
        True,
        0,
        -(2**70),
        1.5,
        "☃ \u0000 nul is fine inside JSON",
        [1, [2, {"a": None}]],
        {"z": 1, "a": 2, "é": [1.25]},
    ]
    before = datetime.now(UTC).replace(microsecond=0)
    for i, p in enumerate(payloads):
        s.publish(p, key=None if i % 2 else f"key-{i}-é")
    events = s.read()
    assert [e.payload for e in events] == payloads
    assert list(events[-1].payload) == ["z", "a", "é"], "key order kept"
    assert [e.key for e in events] == [None if i % 2 else f"key-{i}-é" for i in range(len(payloads))]
    for e in events:
        assert e.published_at.tzinfo == UTC
        assert before.timestamp() - 5 <= e.published_at.timestamp() <= time.time() + 5
    # tuples become lists, as for job payloads
    s.publish((1, 2))  # type: ignore[arg-type]
    assert s.read(after=len(payloads))[0].payload == [1, 2]


def test_event_is_a_frozen_value(store: Store) -> None:
    s = store.stream("s")
    s.publish({"a": 1}, key="k")
    a, b = s.read()[0], s.read()[0]
    assert a == b and a is not b
    assert a != s.read()[0].payload
    assert repr(a).startswith("Event(offset=1, key='k'")
    with pytest.raises(AttributeError):
        a.offset = 5  # type: ignore[misc]


def test_bad_input_writes_nothing(store: Store) -> None:
    s = store.stream("s")
    with pytest.raises(ValueError, match="NUL"):
        s.publish(1, key="a\x00b")
    with pytest.raises(TypeError):
        s.publish({1, 2})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        s.publish({"a": object()})
    with pytest.raises(ValueError):
        s.publish(float("nan"))
    with pytest.raises(TypeError):
        s.publish(1, key=5)  # type: ignore[arg-type]
    assert s.read() == []
    assert s.publish("ok") == 1


def test_payload_size_limit(store_factory: Callable[..., Store]) -> None:
    small = store_factory(max_payload_bytes=100)
    s = small.stream("s")
    s.publish("x" * 98)  # 100 bytes of JSON with the quotes
    with pytest.raises(ValueError, match="max_payload_bytes"):
        s.publish("x" * 99)
    assert offsets(s.read()) == [1]


@pytest.mark.parametrize("name", ["", "x" * 201, "a\x00b", "__alkstore", "__alkstore_outbox:x"])
def test_names_validated(store: Store, name: str) -> None:
    with pytest.raises(alkstore.InvalidName):
        store.stream(name)
    s = store.stream("s")
    with pytest.raises(alkstore.InvalidName):
        s.save_offset(name, 1)
    with pytest.raises(alkstore.InvalidName):
        s.get_offset(name)
    with pytest.raises(alkstore.InvalidName):
        s.subscribe(name)


def test_odd_names_work(store: Store) -> None:
    for name in ("x" * 200, 'it\'s "odd" ☃', "orders:eu-west"):
        s = store.stream(name)
        assert s.name == name
        assert s.publish(name) == 1
        s.save_offset(name, 1)
        assert s.get_offset(name) == 1
        assert [e.payload for e in s.read()] == [name]


def test_streams_are_independent(store: Store) -> None:
    a, b = store.stream("a"), store.stream("b")
    assert a.publish("a1") == 1
    assert b.publish("b1") == 1
    assert a.publish("a2") == 2
    assert [e.payload for e in a.read()] == ["a1", "a2"]
    assert [e.payload for e in b.read()] == ["b1"]
    a.save_offset("c", 2)
    assert b.get_offset("c") == 0


def test_stream_does_no_io_and_repr(store: Store) -> None:
    s = store.stream("orders")
    assert repr(s) == "<alkstore.Stream 'orders'>"
    store.close()
    with pytest.raises(alkstore.StoreClosed):
        s.publish(1)
    with pytest.raises(alkstore.StoreClosed):
        s.read()


# ---------------------------------------------------------------- transactions
def test_publish_in_rolled_back_tx_leaves_nothing_and_no_gap(store: Store) -> None:
    s = store.stream("s")
    assert s.publish("first") == 1
    with pytest.raises(RuntimeError), store.transaction() as tx:
        assert s.publish("ghost", tx=tx) == 2
        assert offsets(s.read(tx=tx)) == [1, 2], "the tx sees its own event"
        raise RuntimeError("roll back")
    assert offsets(s.read()) == [1]
    # The head increment rolled back with the event: the next offset is 2, not 3.
    assert s.publish("second") == 2
    assert offsets(s.read()) == [1, 2]


def test_publish_in_committed_tx_with_business_write(store: Store) -> None:
    s = store.stream("s")
    with store.transaction() as tx:
        a = s.publish({"n": 1}, tx=tx)
        b = s.publish({"n": 2}, key="k", tx=tx)
        s.save_offset("c", a, tx=tx)
        assert s.get_offset("c", tx=tx) == a
    assert (a, b) == (1, 2)
    assert [(e.offset, e.key) for e in s.read()] == [(1, None), (2, "k")]
    assert s.get_offset("c") == 1


def test_calls_without_tx_refused_inside_a_transaction(store: Store) -> None:
    s = store.stream("s")
    with store.transaction() as tx:
        for call in (lambda: s.publish(1), s.read, lambda: s.get_offset("c"), lambda: s.trim_to(1)):
            with pytest.raises(alkstore.TransactionError):
                call()
        with pytest.raises(alkstore.TransactionError):
            next(iter(s.subscribe("c")))
        s.publish(1, tx=tx)
    assert offsets(s.read()) == [1]


# ---------------------------------------------------------------- offsets, trim
def test_offsets_start_at_zero_and_never_move_back(store: Store) -> None:
    s = store.stream("s")
    assert s.get_offset("billing") == 0
    s.save_offset("billing", 5)
    assert s.get_offset("billing") == 5
    s.save_offset("billing", 3)
    assert s.get_offset("billing") == 5
    s.save_offset("billing", 0)
    assert s.get_offset("billing") == 5
    s.save_offset("billing", 9)
    assert s.get_offset("billing") == 9
    assert s.get_offset("audit") == 0
    with pytest.raises(ValueError, match="offset"):
        s.save_offset("billing", -1)
    with pytest.raises(TypeError):
        s.save_offset("billing", 1.0)  # type: ignore[arg-type]


def test_save_offset_rolled_back(store: Store) -> None:
    s = store.stream("s")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        s.save_offset("c", 7, tx=tx)
        raise RuntimeError
    assert s.get_offset("c") == 0


def test_trim_to_deletes_below_and_offsets_are_not_reused(store: Store) -> None:
    s = store.stream("s")
    for i in range(10):
        s.publish(i)
    assert s.trim_to(0) == 0
    assert s.trim_to(4) == 3
    assert offsets(s.read()) == [4, 5, 6, 7, 8, 9, 10]
    assert s.trim_to(4) == 0
    assert s.trim_to(100) == 7
    assert s.read() == []
    assert s.publish("after trim") == 11
    assert offsets(s.read()) == [11]
    with pytest.raises(ValueError):
        s.trim_to(-1)


# ---------------------------------------------------------------- subscribe
def test_subscribe_delivers_in_order_and_saves_on_stop(store: Store) -> None:
    s = store.stream("s")
    for i in range(1, 6):
        s.publish(i)
    stop = alkstore.StopToken()
    got = collect(s.subscribe("c", stop=stop), 5, stop)
    assert [e.payload for e in got] == [1, 2, 3, 4, 5]
    # Ending through stop saved the last event handed out.
    assert s.get_offset("c") == 5


def test_subscribe_resumes_after_the_saved_offset(store: Store) -> None:
    s = store.stream("s")
    for i in range(1, 11):
        s.publish(i)
    s.save_offset("c", 4)
    stop = alkstore.StopToken()
    assert offsets(collect(s.subscribe("c", stop=stop, batch=3), 3, stop)) == [5, 6, 7]
    stop = alkstore.StopToken()
    assert offsets(collect(s.subscribe("c", stop=stop), 3, stop)) == [8, 9, 10]
    assert s.get_offset("c") == 10


def test_break_redelivers_the_last_event(store: Store) -> None:
    s = store.stream("s")
    for i in range(1, 6):
        s.publish(i)
    assert offsets(collect(s.subscribe("c"), 3)) == [1, 2, 3]
    assert s.get_offset("c") == 2, "asking for 3 saved 2; 3 was never finished"
    assert offsets(collect(s.subscribe("c"), 1)) == [3]


def test_exception_in_the_loop_redelivers(store: Store) -> None:
    s = store.stream("s")
    for i in range(1, 4):
        s.publish(i)
    with pytest.raises(ZeroDivisionError):
        for ev in s.subscribe("c"):
            if ev.offset == 2:
                _ = 1 / 0
    assert s.get_offset("c") == 1
    stop = alkstore.StopToken()
    assert offsets(collect(s.subscribe("c", stop=stop), 2, stop)) == [2, 3]


def test_consumers_are_independent(store: Store) -> None:
    s = store.stream("s")
    for i in range(3):
        s.publish(i)
    stop = alkstore.StopToken()
    assert len(collect(s.subscribe("a", stop=stop), 3, stop)) == 3
    stop = alkstore.StopToken()
    assert offsets(collect(s.subscribe("b", stop=stop), 1, stop)) == [1]
    assert (s.get_offset("a"), s.get_offset("b")) == (3, 1)


def test_subscribe_validates_batch(store: Store) -> None:
    s = store.stream("s")
    for bad in (0, 1001):
        with pytest.raises(ValueError, match="batch"):
            s.subscribe("c", batch=bad)
    assert "Subscription" in repr(s.subscribe("c"))


def test_subscriber_woken_by_another_handle(store_factory: Callable[..., Store]) -> None:
    """A waiting subscriber is woken by a commit through another handle, not by the poll."""
    waiting = store_factory(poll_interval_s=60)
    producer = store_factory().stream("s")
    stop = alkstore.StopToken()
    got: list[tuple[Event, float]] = []

    def consume() -> None:
        for ev in waiting.stream("s").subscribe("c", stop=stop):
            got.append((ev, time.monotonic()))
            if len(got) == 2:
                stop.stop()

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)
    sent = time.monotonic()
    producer.publish("one")
    time.sleep(0.3)
    producer.publish("two")
    t.join(20)
    assert not t.is_alive()
    assert [e.payload for e, _ in got] == ["one", "two"]
    assert got[0][1] - sent < 5


def test_stop_ends_a_waiting_subscriber(store: Store) -> None:
    stop = alkstore.StopToken()
    got: list[Event] = []
    t = threading.Thread(target=lambda: got.extend(store.stream("s").subscribe("c", stop=stop)))
    t.start()
    time.sleep(0.3)
    stop.stop()
    t.join(10)
    assert not t.is_alive() and got == []


def test_close_raises_store_closed_in_a_waiting_subscriber(store_factory: Callable[..., Store]) -> None:
    st = store_factory()
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            for _ in st.stream("s").subscribe("c"):
                pass
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.3)
    st.close()
    t.join(10)
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], alkstore.StoreClosed)


def test_async_for_subscription(store_factory: Callable[..., Store]) -> None:
    st = store_factory(poll_interval_s=60)
    s = st.stream("s")
    s.publish(1)

    async def main() -> list[int]:
        stop = alkstore.StopToken()
        got: list[int] = []
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while not stop.stopped:
                ticks += 1
                await asyncio.sleep(0.01)

        tick = asyncio.create_task(ticker())
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, s.publish, 2)
        async for ev in s.subscribe("c", stop=stop):
            got.append(ev.payload)
            if len(got) == 2:
                stop.stop()
        await tick
        assert ticks > 5, "the event loop kept running while the subscriber waited"
        return got

    assert asyncio.run(main()) == [1, 2]
    assert s.get_offset("c") == 2


def test_cancelled_async_wait_saves_nothing(store: Store) -> None:
    s = store.stream("s")

    async def main() -> None:
        sub = s.subscribe("c")
        waiting = asyncio.ensure_future(sub.__anext__())
        await asyncio.sleep(0.3)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(main())
    s.publish("kept")
    assert offsets(collect(s.subscribe("c"), 1)) == [1]


def test_stream_handle_type(store: Store) -> None:
    assert isinstance(store.stream("s"), Stream)
