"""Cron schedules in a time zone (SPEC §23) through the store, on both
engines: registration, what a fire enqueues through ``run_schedules``, the
next fire a re-registration keeps or recomputes, and the periodic task."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import alkstore
from alkstore import Store
from alkstore.testing import drain
from tests.conftest import Target
from tests.scheduling import Runner, next_fire, pending, wait_until


def test_a_cron_schedule_reads_back_as_registered_with_its_next_fires(store: Store) -> None:
    store.schedule("report", "0 9 * * MON-FRI", "reports", payload={"kind": "daily"}, tz="Europe/Berlin")
    (s,) = store.schedules()
    assert (s.spec, s.tz, s.queue) == ("0 9 * * MON-FRI", "Europe/Berlin", "reports")
    now = datetime.now(UTC)
    expected = alkstore.next_fires("0 9 * * MON-FRI", tz="Europe/Berlin", after=now, n=3)
    assert s.next_fires(3) == expected and s.next_fire_at == expected[0]
    local = s._local_fires(3)
    assert all(f.endswith(("+01:00", "+02:00")) and "T09:00:00" in f for f in local), local


def test_re_registering_keeps_the_next_fire_and_a_new_zone_recomputes_it(store: Store) -> None:
    store.schedule("r", "30 6 * * 1-5", "q", tz="Asia/Tokyo")
    first = next_fire(store, "r")
    store._advance_clock(3600)
    store.schedule("r", "30 6 * * mon-fri", "q", tz="Asia/Tokyo", priority=3)
    assert next_fire(store, "r") == first, "an equal spec and zone: a restart never delays or skips a fire"
    # The handle's clock is an hour on. The new zone's next fire follows
    # from that clock, whatever the weekday: on a Sunday evening (UTC)
    # Chicago's Monday fire comes before Tokyo's Tuesday one.
    clock = datetime.fromtimestamp(int(datetime.now(UTC).timestamp()) + 3600, UTC)
    store.schedule("r", "30 6 * * 1-5", "q", tz="America/Chicago")
    (s,) = store.schedules()
    (expected,) = alkstore.next_fires("30 6 * * 1-5", tz="America/Chicago", after=clock, n=1)
    assert s.tz == "America/Chicago" and s.next_fire_at != datetime.fromtimestamp(first, UTC)
    assert s.next_fire_at == expected


def test_a_cron_schedule_fires_through_run_schedules(store: Store) -> None:
    store.schedule("tick", "* * * * *", "ticks", payload={"n": 1}, tz="Australia/Lord_Howe")
    due = next_fire(store, "tick")
    store._advance_clock(due - int(datetime.now(UTC).timestamp()) + 1)
    with Runner(store):
        wait_until(lambda: pending(store, "ticks") >= 1, what="the cron fire")
    job = store.queue("ticks").claim("w")
    assert job is not None and job.payload == {"n": 1}
    assert next_fire(store, "tick") == due + 60


def test_schedule_arguments(store: Store) -> None:
    with pytest.raises(ValueError, match="tz must be an IANA time zone"):
        store.schedule("s", "0 9 * * *", "q", tz="Europe/Nowhere")
    with pytest.raises(alkstore.InvalidSpec, match="bad hour field"):
        store.schedule("s", "0 25 * * *", "q")
    assert store.schedules() == []
    store.schedule("e", "@every 1h", "q", tz="Europe/Berlin")
    assert store.schedules()[0].tz == "Europe/Berlin", "@every keeps the zone it was given, and ignores it"


def test_a_periodic_task_registers_its_cron_schedule(store: Store, target: Target) -> None:
    tasks = alkstore.Tasks(store)
    ran: list[str] = []

    @tasks.periodic("15 3 * * *", tz="Europe/Berlin", name="nightly", queue="maintenance")
    def nightly() -> None:
        ran.append("ran")

    assert tasks.register_schedules() == ["nightly"]
    (s,) = store.schedules()
    assert (s.name, s.spec, s.tz, s.queue) == ("nightly", "15 3 * * *", "Europe/Berlin", "maintenance")
    assert s.payload == {"task": nightly.name, "args": [], "kwargs": {}}
    store._advance_clock(int(s.next_fire_at.timestamp() - datetime.now(UTC).timestamp()) + 1)
    with Runner(store):
        wait_until(lambda: pending(store, "maintenance") >= 1, what="the nightly fire")
    assert drain(tasks).acked == 1 and ran == ["ran"]
