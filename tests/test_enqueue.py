"""Enqueue: payloads, timing options, validation, ids (SPEC §4, §4.1, §13)."""

from __future__ import annotations

import json
import math
import time
from collections import UserDict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

import pytest

import alkstore

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer

ROUND_TRIP = [
    pytest.param({"b": 1, "a": 2, "c": {"z": [], "y": {}}}, id="dict-order"),
    pytest.param({"nested": {"list": [1, [2, [3, {"deep": None}]]]}}, id="nested"),
    pytest.param({"s": "héllo ☃ 𝄞 中文", "ключ": "значение"}, id="unicode"),
    pytest.param({"quote": '"\\/\b\f\n\r\t', "nul": "a\x00b"}, id="escapes"),
    pytest.param({"big": 10**30, "neg": -(10**30), "i64": 2**63 - 1}, id="big-ints"),
    pytest.param({"f": [1.0, 0.1, 1e100, -0.0, 2.5e-300, 123456789.125]}, id="floats"),
    pytest.param([5e-324, 1.7976931348623157e308, 1e16, 1.23e-18, -1e-7], id="float-extremes"),
    pytest.param((1, "two", (3.0, None)), id="tuple-to-list"),
    pytest.param([True, False, None, 0, 1], id="bool-none-int"),
    pytest.param("just a string", id="str"),
    pytest.param(42, id="int"),
    pytest.param(3.5, id="float"),
    pytest.param(None, id="null"),
    pytest.param(True, id="bool"),
    pytest.param([], id="empty-list"),
    pytest.param({}, id="empty-dict"),
]


def same_json(a: Any, b: Any) -> bool:
    """Equal values, types (1 vs 1.0 vs True) and dict key order."""
    return json.dumps(a) == json.dumps(b)


@pytest.mark.parametrize("payload", ROUND_TRIP)
def test_payload_round_trip(store: alkstore.Store, payload: Any) -> None:
    expected = json.loads(json.dumps(payload))
    q = store.queue("q")
    job_id = q.enqueue(payload)
    job = q.get_job(job_id)
    assert job is not None
    assert same_json(job.payload, expected), (job.payload, expected)
    handle = q.claim("w")
    assert handle is not None
    assert same_json(handle.payload, expected), (handle.payload, expected)
    assert handle.ack()


def test_payload_lone_surrogate(store: alkstore.Store) -> None:
    """json.dumps escapes a lone surrogate; it must come back as it went in."""
    payload = {"s": "\ud800x"}
    q = store.queue("q")
    job = q.get_job(q.enqueue(payload))
    assert job is not None and job.payload == payload


def test_payload_many_round_trip(store: alkstore.Store) -> None:
    payloads: list[Any] = [p.values[0] for p in ROUND_TRIP]
    q = store.queue("q")
    ids = q.enqueue_many(payloads)
    assert len(ids) == len(payloads)
    for job_id, p in zip(ids, payloads, strict=True):
        job = q.get_job(job_id)
        assert job is not None and same_json(job.payload, json.loads(json.dumps(p)))


# --- refused payloads: nothing written ---------------------------------------


class Thing:
    pass


BAD_TYPE = [
    pytest.param({1, 2}, id="set"),
    pytest.param({"a": {1, 2}}, id="nested-set"),
    pytest.param(Thing(), id="object"),
    pytest.param(b"bytes", id="bytes"),
    pytest.param({"a": [b"x"]}, id="nested-bytes"),
    pytest.param({1: "a"}, id="int-key"),
    pytest.param({"ok": {(1, 2): "a"}}, id="nested-tuple-key"),
    pytest.param([{None: 1}], id="none-key"),
]
_cycle: list[Any] = []
_cycle.append(_cycle)

BAD_VALUE = [
    pytest.param(_cycle, id="cycle"),
    pytest.param(math.nan, id="nan"),
    pytest.param({"x": math.inf}, id="inf"),
    pytest.param([1, [-math.inf]], id="neg-inf"),
]


def assert_empty(q: alkstore.Queue) -> None:
    s = q.stats()
    assert (s.pending, s.scheduled, s.processing, s.dead) == (0, 0, 0, 0)
    assert q.claim("w") is None


@pytest.mark.parametrize("payload", BAD_TYPE)
def test_payload_type_error(store: alkstore.Store, payload: Any) -> None:
    q = store.queue("q")
    with pytest.raises(TypeError):
        q.enqueue(payload)
    assert_empty(q)


@pytest.mark.parametrize("payload", BAD_VALUE)
def test_payload_value_error(store: alkstore.Store, payload: Any) -> None:
    q = store.queue("q")
    with pytest.raises(ValueError):
        q.enqueue(payload)
    assert_empty(q)


def test_payload_too_large(store_factory: Callable[..., alkstore.Store]) -> None:
    q = store_factory(max_payload_bytes=100).queue("q")
    ok = q.enqueue("x" * 50)
    with pytest.raises(ValueError, match="max_payload_bytes"):
        q.enqueue("x" * 200)
    with pytest.raises(ValueError):
        q.enqueue({"k": "é" * 60})  # 60 chars, 120 bytes of UTF-8
    stats = q.stats()
    assert stats.pending == 1
    assert q.enqueue(1) > ok


def test_default_payload_limit_is_one_mib(store: alkstore.Store) -> None:
    q = store.queue("q")
    limit = 1 << 20
    fits = "x" * (limit - 2)  # plus two quotes: exactly 1 MiB of JSON text
    job_id = q.enqueue(fits)
    with pytest.raises(ValueError, match="max_payload_bytes"):
        q.enqueue(fits + "x")
    job = q.get_job(job_id)
    assert job is not None and job.payload == fits
    assert q.stats().pending == 1


def test_enqueue_many_large_batch(store: alkstore.Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many([{"i": i} for i in range(10_000)])
    assert len(ids) == len(set(ids)) == 10_000
    assert ids == sorted(ids)
    assert q.stats().pending == 10_000
    last = q.get_job(ids[-1])
    assert last is not None and last.payload == {"i": 9_999}


def test_failed_enqueue_leaves_ids_increasing(store: alkstore.Store) -> None:
    q = store.queue("q")
    first = q.enqueue({"n": 1})
    bads: list[Any] = [{1, 2}, math.nan, b"x"]
    for bad in bads:
        with pytest.raises((TypeError, ValueError)):
            q.enqueue(bad)
    second = q.enqueue({"n": 2})
    assert second > first
    assert q.stats().pending == 2


@pytest.mark.parametrize(
    ("bad", "exc"),
    [({"bad": {1}}, TypeError), (math.nan, ValueError), (b"x", TypeError), ("x" * 500, ValueError)],
    ids=["set", "nan", "bytes", "too-large"],
)
def test_enqueue_many_validates_all_first(
    store_factory: Callable[..., alkstore.Store], bad: Any, exc: type[Exception]
) -> None:
    q = store_factory(max_payload_bytes=100).queue("q")
    with pytest.raises(exc):
        q.enqueue_many([{"ok": 1}, {"ok": 2}, bad, {"ok": 3}])
    assert_empty(q)


def test_enqueue_many_empty(store: alkstore.Store) -> None:
    q = store.queue("q")
    assert q.enqueue_many([]) == []
    assert_empty(q)


def test_enqueue_many_accepts_iterables(store: alkstore.Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many({"i": i} for i in range(5))
    assert len(ids) == 5 and ids == sorted(ids) and len(set(ids)) == 5
    claimed = [q.claim("w") for _ in range(5)]
    assert [c.payload["i"] for c in claimed if c is not None] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "payloads",
    [
        "abc",
        b"abc",
        bytearray(b"abc"),
        memoryview(b"abc"),
        {"to": "ada@example.com"},
        MappingProxyType({"to": "ada@example.com"}),
        UserDict({"to": "ada@example.com"}),
    ],
    ids=["str", "bytes", "bytearray", "memoryview", "dict", "mappingproxy", "userdict"],
)
def test_enqueue_many_refuses_str_bytes_and_mappings(store: alkstore.Store, payloads: Any) -> None:
    """`enqueue_many("abc")` used to enqueue three jobs, a dict its keys."""
    q = store.queue("q")
    with pytest.raises(TypeError, match="payloads"):
        q.enqueue_many(payloads)
    assert_empty(q)


def test_enqueue_many_options_apply_to_all(store: alkstore.Store) -> None:
    q = store.queue("q")
    ids = q.enqueue_many([1, 2, 3], priority=7, max_attempts=9, delay=60, expires=600)
    for job_id in ids:
        job = q.get_job(job_id)
        assert job is not None
        assert (job.priority, job.max_attempts) == (7, 9)
        assert job.run_at - job.enqueued_at == timedelta(seconds=60)
        assert job.expires_at is not None
        assert job.expires_at - job.enqueued_at == timedelta(seconds=600)
    assert q.stats().scheduled == 3


# --- timing -------------------------------------------------------------------


def ready_after(q: alkstore.Queue, job_id: int) -> timedelta:
    job = q.get_job(job_id)
    assert job is not None
    return job.run_at - job.enqueued_at


@pytest.mark.parametrize(
    ("delay", "seconds"),
    [
        (0, 0),
        (5, 5),
        (0.2, 1),
        (1.5, 2),
        (2.0, 2),
        (timedelta(seconds=30), 30),
        (timedelta(milliseconds=1), 1),
    ],
    ids=["zero", "int", "0.2-up", "1.5-up", "2.0", "timedelta", "timedelta-ms"],
)
def test_delay(store: alkstore.Store, delay: Any, seconds: int) -> None:
    q = store.queue("q")
    job_id = q.enqueue({}, delay=delay)
    assert ready_after(q, job_id) == timedelta(seconds=seconds)


def test_delayed_job_not_ready(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue({}, delay=100)
    stats = q.stats()
    assert (stats.pending, stats.scheduled) == (0, 1)
    assert q.claim("w") is None


def test_run_at_aware_datetime(store: alkstore.Store) -> None:
    q = store.queue("q")
    when = datetime.fromtimestamp(int(time.time()) + 3600, tz=UTC)
    job = q.get_job(q.enqueue({}, run_at=when))
    assert job is not None and job.run_at == when
    other_tz = when.astimezone(timezone(timedelta(hours=5, minutes=30)))
    job2 = q.get_job(q.enqueue({}, run_at=other_tz))
    assert job2 is not None and job2.run_at == when


def test_run_at_unix_seconds(store: alkstore.Store) -> None:
    q = store.queue("q")
    ts = int(time.time()) + 7200
    job = q.get_job(q.enqueue({}, run_at=ts))
    assert job is not None
    assert job.run_at == datetime.fromtimestamp(ts, tz=UTC)


def test_run_at_in_past_is_ready(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({}, run_at=datetime(2001, 1, 1, tzinfo=UTC))
    handle = q.claim("w")
    assert handle is not None and handle.id == job_id


def test_naive_datetime_refused(store: alkstore.Store) -> None:
    q = store.queue("q")
    with pytest.raises(ValueError):
        q.enqueue({}, run_at=datetime(2030, 1, 1))
    assert_empty(q)


def test_delay_wins_over_run_at(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({}, delay=50, run_at=int(time.time()) + 10**6)
    assert ready_after(q, job_id) == timedelta(seconds=50)
    job_id = q.enqueue({}, delay=0, run_at=int(time.time()) + 10**6)
    assert ready_after(q, job_id) == timedelta(0)


@pytest.mark.parametrize("delay", [-1, -0.5, timedelta(seconds=-1), math.nan, math.inf])
def test_bad_delay(store: alkstore.Store, delay: Any) -> None:
    q = store.queue("q")
    with pytest.raises(ValueError):
        q.enqueue({}, delay=delay)
    assert_empty(q)


@pytest.mark.parametrize(
    ("expires", "seconds"),
    [(10, 10), (0.5, 1), (timedelta(minutes=2), 120)],
    ids=["int", "float-up", "timedelta"],
)
def test_expires(store: alkstore.Store, expires: Any, seconds: int) -> None:
    q = store.queue("q")
    job = q.get_job(q.enqueue({}, expires=expires))
    assert job is not None and job.expires_at is not None
    assert job.expires_at - job.enqueued_at == timedelta(seconds=seconds)


def test_no_expires_is_none(store: alkstore.Store) -> None:
    q = store.queue("q")
    job = q.get_job(q.enqueue({}))
    assert job is not None and job.expires_at is None


# --- priority and max_attempts --------------------------------------------------


@pytest.mark.parametrize("priority", [True, False])
def test_bool_priority_type_error(store: alkstore.Store, priority: bool) -> None:
    q = store.queue("q")
    with pytest.raises(TypeError):
        q.enqueue({}, priority=priority)
    assert_empty(q)


@pytest.mark.parametrize("priority", [2**31, -(2**31) - 1, 10**20])
def test_priority_out_of_range(store: alkstore.Store, priority: int) -> None:
    q = store.queue("q")
    with pytest.raises(ValueError):
        q.enqueue({}, priority=priority)
    assert_empty(q)


@pytest.mark.parametrize("priority", [2**31 - 1, -(2**31), 0, -5])
def test_priority_in_range(store: alkstore.Store, priority: int) -> None:
    q = store.queue("q")
    job = q.get_job(q.enqueue({}, priority=priority))
    assert job is not None and job.priority == priority


def test_max_attempts_override(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=3)
    default = q.get_job(q.enqueue({}))
    override = q.get_job(q.enqueue({}, max_attempts=1))
    assert default is not None and default.max_attempts == 3
    assert override is not None and override.max_attempts == 1


@pytest.mark.parametrize("value", [0, -1])
def test_max_attempts_override_refused(store: alkstore.Store, value: int) -> None:
    q = store.queue("q")
    with pytest.raises(ValueError):
        q.enqueue({}, max_attempts=value)
    assert_empty(q)


# --- ids ------------------------------------------------------------------------


def test_ids_positive_unique_increasing(store: alkstore.Store) -> None:
    a, b = store.queue("a"), store.queue("b")
    ids = [a.enqueue(1), b.enqueue(2), *a.enqueue_many([3, 4]), b.enqueue(5)]
    assert all(isinstance(i, int) and i > 0 for i in ids)
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


def test_ids_never_reused(store_factory: Callable[..., alkstore.Store]) -> None:
    """Deleting the newest rows (ack, cancel, and a reopen) must not hand their ids out again."""
    store = store_factory()
    q = store.queue("q")
    acked = q.enqueue(1)
    handle = q.claim("w")
    assert handle is not None and handle.ack()
    cancelled = q.enqueue(2)
    assert q.cancel(cancelled)
    after = q.enqueue(3)
    assert after > cancelled > acked
    handle = q.claim("w")
    assert handle is not None and handle.ack()
    store.close()
    reopened = store_factory()
    assert reopened.queue("q").enqueue(4) > after


def test_ids_not_reused_after_every_row_is_gone(store_factory: Callable[..., alkstore.Store]) -> None:
    """Acked, cancelled, dead-then-purged: with both tables empty, new ids still climb."""
    store = store_factory()
    q = store.queue("q", dead_letter_retention_s=0)
    acked, cancelled, purged = q.enqueue_many(["a", "c", "p"])
    ha, _hc, hp = q.claim_batch("w", 3)
    assert ha.id == acked and hp.id == purged
    assert ha.ack()
    assert q.cancel(cancelled)
    assert hp.fail("dies")
    store._advance_clock(5)
    assert q.sweep_expired().purged == 1
    assert q.get_job(purged) is None
    s = q.stats()
    assert (s.pending, s.processing, s.dead) == (0, 0, 0)
    nxt = q.enqueue("next")
    assert nxt > purged
    assert q.cancel(nxt)
    store.close()
    reopened = store_factory().queue("q", dead_letter_retention_s=0)
    assert reopened.enqueue("after reopen") > nxt
