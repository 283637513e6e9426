"""Registering schedules and what a fire enqueues (SPEC §8, §13).

Firing is driven by a real runner (`run_schedules` on a thread) against a
store whose clock was moved with `_advance_clock`, so hundreds of intervals
pass instantly. Leadership, processes and crashes: test_schedule_runner.py.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, timedelta

import pytest

import alkstore
from tests.scheduling import Runner, next_fire, pending, wait_until

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer

BAD_SPECS = [
    "@every 0s",
    "@every 5x",
    "@every -1m",
    "@every 367d",  # over 366 days
    "@every 05s",  # leading zero
    "@every 5",  # no unit
    "@every s",
    "@every  5s",
    "@every 5s ",
    " @every 5s",
    "@EVERY 5s",
    "@every 5S",
    "@every 1.5m",
    "@every 1h30m",
    "@often",
    "every 5s",
    "",
]
GOOD_SPECS = [
    ("@every 1s", 1),
    ("@every 30s", 30),
    ("@every 1m", 60),
    ("@every 90m", 5400),
    ("@every 2h", 7200),
    ("@every 1d", 86400),
    ("@every 366d", 366 * 86400),
]
BAD_NAMES = ["", "__alkstore", "__alkstore_scheduler", "__alkstore_outbox:x", "x" * 201, "a\0b"]


@pytest.mark.parametrize("spec", BAD_SPECS)
def test_bad_spec_is_invalid_spec(store: alkstore.Store, spec: str) -> None:
    with pytest.raises(alkstore.InvalidSpec) as info:
        store.schedule("s", spec, "q")
    assert info.value.spec == spec
    assert isinstance(info.value, ValueError)
    assert "@every" in str(info.value)
    assert store.schedules() == []


@pytest.mark.parametrize(("spec", "interval"), GOOD_SPECS)
def test_good_spec_is_stored_on_a_boundary(store: alkstore.Store, spec: str, interval: int) -> None:
    before = math.floor(time.time())
    store.schedule("s", spec, "q")
    after = math.floor(time.time())
    (s,) = store.schedules()
    assert s.spec == spec
    fire = int(s.next_fire_at.timestamp())
    assert fire % interval == 0, "boundaries are multiples of the interval on the epoch"
    # the first boundary strictly after registration (the db clock is this machine's)
    assert fire in {(t // interval + 1) * interval for t in range(before - 1, after + 2)}


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_schedule_name_or_queue_is_refused(store: alkstore.Store, name: str) -> None:
    with pytest.raises(alkstore.InvalidName):
        store.schedule(name, "@every 1m", "q")
    with pytest.raises(alkstore.InvalidName):
        store.schedule("s", "@every 1m", name)
    with pytest.raises(alkstore.InvalidName):
        store.unschedule(name)
    assert store.schedules() == []


def test_bad_arguments_write_nothing(store_factory: Callable[..., alkstore.Store]) -> None:
    store = store_factory(max_payload_bytes=64)
    with pytest.raises(ValueError, match="max_payload_bytes"):
        store.schedule("s", "@every 1m", "q", payload="x" * 100)
    with pytest.raises(TypeError):
        store.schedule("s", "@every 1m", "q", payload={1, 2})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.schedule("s", "@every 1m", "q", payload=float("nan"))
    with pytest.raises(TypeError):
        store.schedule("s", "@every 1m", "q", priority=True)
    with pytest.raises(ValueError):
        store.schedule("s", "@every 1m", "q", priority=2**31)
    with pytest.raises(ValueError):
        store.schedule("s", "@every 1m", "q", max_attempts=0)
    with pytest.raises(ValueError):
        store.schedule("s", "@every 1m", "q", expires=-1)
    assert store.schedules() == []


def test_schedules_lists_every_field_by_name(store: alkstore.Store) -> None:
    store.schedule(
        "b", "@every 1h", "q2", payload=[1, "two", None], priority=-4, max_attempts=2, expires=90.5
    )
    store.schedule("a", "@every 5m", "q1")
    store.schedule("B", "@every 10s", "q3", payload={"k": (1, 2)}, expires=timedelta(minutes=1))
    got = store.schedules()
    assert [s.name for s in got] == ["B", "a", "b"], "byte order on both engines"
    big_b, a, b = got
    assert (a.spec, a.queue, a.payload, a.priority, a.max_attempts, a.expires) == (
        "@every 5m",
        "q1",
        None,
        0,
        None,
        None,
    )
    assert (b.queue, b.payload, b.priority, b.max_attempts, b.expires) == ("q2", [1, "two", None], -4, 2, 91)
    assert (big_b.payload, big_b.expires) == ({"k": [1, 2]}, 60)
    assert a.next_fire_at.tzinfo is not None and a.next_fire_at.utcoffset() == timedelta(0)
    assert a.next_fire_at.tzinfo == UTC or a.next_fire_at.tzname() == "UTC"
    assert "name='a'" in repr(a) and "@every 5m" in repr(a)
    assert a == store.schedules()[1]


def test_same_interval_in_another_unit_keeps_the_next_fire(store: alkstore.Store) -> None:
    store.schedule("s", "@every 60s", "q", payload={"v": 1})
    first = next_fire(store, "s")
    store._advance_clock(150)  # a restart much later, before any runner fired it
    store.schedule("s", "@every 1m", "q", payload={"v": 2}, priority=3)
    (s,) = store.schedules()
    assert int(s.next_fire_at.timestamp()) == first, "kept: a restart never delays or skips a fire"
    assert (s.spec, s.payload, s.priority) == ("@every 1m", {"v": 2}, 3)


def test_changed_spec_recomputes_the_next_fire(store: alkstore.Store) -> None:
    store.schedule("s", "@every 1h", "q")
    store._advance_clock(10_000)
    store.schedule("s", "@every 7s", "q")
    fire = next_fire(store, "s")
    now = time.time() + 10_000
    assert fire % 7 == 0
    assert now - 2 < fire <= now + 8, "the first 7 s boundary after now, on the store's clock"


def test_registration_uses_the_store_clock(store: alkstore.Store) -> None:
    store._advance_clock(86_400 * 3)
    store.schedule("s", "@every 1d", "q")
    fire = next_fire(store, "s")
    assert fire % 86_400 == 0
    assert time.time() + 86_400 * 3 - 2 < fire <= time.time() + 86_400 * 4


def test_unschedule(store: alkstore.Store) -> None:
    store.schedule("s", "@every 1m", "q")
    assert store.unschedule("s") is True
    assert store.unschedule("s") is False
    assert store.schedules() == []


def test_schedule_in_a_rolled_back_transaction_leaves_nothing(store: alkstore.Store) -> None:
    with pytest.raises(RuntimeError), store.transaction() as tx:
        store.schedule("s", "@every 1m", "q", tx=tx)
        raise RuntimeError("roll back")
    assert store.schedules() == []
    with store.transaction() as tx:
        store.schedule("s", "@every 1m", "q", tx=tx)
    assert [s.name for s in store.schedules()] == ["s"]
    with pytest.raises(RuntimeError), store.transaction() as tx:
        assert store.unschedule("s", tx=tx) is True
        raise RuntimeError("roll back")
    assert [s.name for s in store.schedules()] == ["s"]
    with store.transaction() as tx:
        assert store.unschedule("s", tx=tx) is True
    assert store.schedules() == []


def test_calls_without_tx_from_a_transaction_thread_are_refused(store: alkstore.Store) -> None:
    with store.transaction():
        with pytest.raises(alkstore.TransactionError):
            store.schedule("s", "@every 1m", "q")
        with pytest.raises(alkstore.TransactionError):
            store.schedules()
        with pytest.raises(alkstore.TransactionError):
            store.run_schedules(alkstore.StopToken())
        with pytest.raises(alkstore.TransactionError), store.lock("l", 10):
            pass


def test_catch_up_is_capped_at_64(store: alkstore.Store) -> None:
    # An hour interval: after the capped catch-up the next boundary is up to
    # an hour away, so no further fire can race the stop below.
    store.schedule("s", "@every 1h", "q")
    store._advance_clock(200 * 3600)
    with Runner(store) as r:
        wait_until(lambda: pending(store, "q") >= 64, what="the catch-up fires")
        time.sleep(0.3)  # a second tick, if the runner made one, would fire more
        r.finish()
    assert pending(store, "q") == 64
    now = time.time() + 200 * 3600
    fire = next_fire(store, "s")
    assert now - 2 < fire <= now + 3600, "next_fire_at jumped to the first boundary after now"


def test_fires_carry_the_schedule_stamps_over_the_derived_defaults(store: alkstore.Store) -> None:
    store.schedule("plain", "@every 1h", "plain")
    store.schedule("stamped", "@every 1h", "stamped", {"n": 1}, priority=5, max_attempts=7, expires=600)
    store._advance_clock(3600)  # exactly one boundary of each is due
    with Runner(store) as r:
        wait_until(lambda: pending(store, "plain") == 1 and pending(store, "stamped") == 1, what="fires")
        r.finish()
    plain = store.queue("plain").claim("w")
    assert plain is not None
    assert (plain.payload, plain.priority, plain.max_attempts, plain.expires_at) == (None, 0, 3, None)
    assert plain.deadline - plain.claimed_at == timedelta(seconds=300)
    stamped = store.queue("stamped").claim("w")
    assert stamped is not None
    assert (stamped.payload, stamped.priority, stamped.max_attempts) == ({"n": 1}, 5, 7)
    assert stamped.deadline - stamped.claimed_at == timedelta(seconds=300)
    assert stamped.expires_at is not None
    assert stamped.expires_at - stamped.enqueued_at == timedelta(seconds=600)
    job = store.queue("stamped").get_job(stamped.id)
    assert job is not None and job.max_attempts == 7
    # the retry curve is the derived base of 5 s: attempt 1 waits 3..5 s
    assert stamped.retry("boom")
    job = store.queue("stamped").get_job(stamped.id)
    assert job is not None
    assert 3 <= (job.run_at - stamped.claimed_at).total_seconds() <= 6


def test_maintenance_recipe_sweeps_an_expired_job(store: alkstore.Store) -> None:
    """SPEC §4.4: a schedule + a consumer calling sweep_expired is the maintenance loop."""
    emails = store.queue("emails")
    doomed = emails.enqueue({"to": "a@example.com"}, expires=60)
    store.schedule("maintenance", "@every 300s", "mq", payload={"task": "sweep", "queue": "emails"})
    store._advance_clock(301)  # past the expiry and past the first boundary
    stop = alkstore.StopToken()
    swept: list[alkstore.Swept] = []

    def consume() -> None:
        for job in store.queue("mq").jobs("maintenance-worker", stop=stop):
            with job:
                if job.payload["task"] == "sweep":
                    swept.append(store.queue(job.payload["queue"]).sweep_expired())

    consumer = threading.Thread(target=consume)
    consumer.start()
    try:
        with Runner(store) as r:
            wait_until(lambda: bool(swept), what="the maintenance fire to be consumed")
            r.finish()
    finally:
        stop.stop()
        consumer.join(30)
    assert swept[0].expired == 1
    job = emails.get_job(doomed)
    assert job is not None and (job.state, job.last_error) == ("dead", "expired")
