"""The schedule runner: leadership, standby, takeover and shutdown (SPEC §5, §8).

Boundary guarantee: every test that lets time pass ends by checking
``jobs == (last next_fire_at - first next_fire_at) / interval`` — each
boundary the schedule advanced over produced exactly one job, whoever fired
it (one process, two, a killed one and its successor, a thief) — and that
the schedule did not fall behind the clock (nothing left unfired).

Real time with `@every 1s` where processes take turns; `_advance_clock` where
a lease must lapse (a lease is judged by the database clock plus each
handle's own offset).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Callable

import pytest

import alkstore
from tests.conftest import Target
from tests.processes import read_line, sigkill, spawn
from tests.scheduling import Runner, next_fire, pending, wait_until


def assert_each_boundary_fired_once(store: alkstore.Store, first: int, clock_offset: int = 0) -> None:
    last = next_fire(store, "tick")
    assert pending(store, "ticks") == last - first, "one job per elapsed 1 s boundary"
    assert last >= time.time() + clock_offset - 2, "no boundary left unfired"


def stop_helper(proc: subprocess.Popen[str]) -> None:
    """SIGTERM: the helper's stop token, a clean stop."""
    proc.send_signal(signal.SIGTERM)
    assert read_line(proc) == "stopped"
    assert proc.wait(10) == 0


@pytest.mark.slow
def test_two_runner_processes_fire_each_boundary_once(store: alkstore.Store, target: Target) -> None:
    store.schedule("tick", "@every 1s", "ticks")
    first = next_fire(store, "tick")
    with spawn("scheduler.py", *target.argv()) as a:
        assert read_line(a) == "running"
        wait_until(lambda: pending(store, "ticks") >= 2, what="the first process to fire")
        with spawn("scheduler.py", *target.argv()) as b:
            assert read_line(b) == "running"
            time.sleep(2.5)  # both run: a leads, b stands by
            stop_helper(a)  # a clean stop hands the lease over
            n = pending(store, "ticks")
            wait_until(lambda: pending(store, "ticks") >= n + 2, timeout=10, what="b to take over")
            stop_helper(b)
    assert_each_boundary_fired_once(store, first)


@pytest.mark.slow
def test_a_killed_leader_is_replaced_once_its_lease_lapses(
    store: alkstore.Store, target: Target, store_factory: Callable[..., alkstore.Store]
) -> None:
    store.schedule("tick", "@every 1s", "ticks")
    first = next_fire(store, "tick")
    with spawn("scheduler.py", *target.argv()) as a:
        assert read_line(a) == "running"
        wait_until(lambda: pending(store, "ticks") >= 2, what="the first process to fire")
        sigkill(a)
    n = pending(store, "ticks")
    # The dead leader's lease still holds: a standby does not take over yet.
    with Runner(store) as standby:
        time.sleep(1.5)
        assert pending(store, "ticks") == n
        standby.finish()
    # 31 s later (on this handle's clock) the lease has lapsed.
    late = store_factory()
    late._advance_clock(31)
    with Runner(late) as r:
        wait_until(lambda: next_fire(store, "tick") > time.time() + 30, what="the takeover's catch-up")
        r.finish()
    assert pending(store, "ticks") > n, "the boundaries missed while nobody led were fired"
    assert_each_boundary_fired_once(store, first, clock_offset=31)


@pytest.mark.slow
def test_a_stolen_lease_raises_leadership_lost(
    store: alkstore.Store, store_factory: Callable[..., alkstore.Store]
) -> None:
    store.schedule("tick", "@every 1s", "ticks")
    first = next_fire(store, "tick")
    leader = Runner(store).start()
    try:
        wait_until(lambda: pending(store, "ticks") >= 1, what="the leader to fire")
        thief_store = store_factory()
        thief_store._advance_clock(60)  # the leader's lease has lapsed on this clock
        with Runner(thief_store) as thief:
            wait_until(lambda: next_fire(store, "tick") > time.time() + 59, what="the thief to lead")
            # The leader notices at its next renewal (at most 10 s away).
            leader.thread.join(20)
            assert not leader.thread.is_alive()
            assert isinstance(leader.error, alkstore.LeadershipLost)
            assert thief.error is None and thief.thread.is_alive()
            thief.finish()
    finally:
        leader.stop.stop()
        leader.thread.join(30)
    assert_each_boundary_fired_once(store, first, clock_offset=60)


def test_a_lapsed_lease_raises_before_ticking(store: alkstore.Store) -> None:
    store.schedule("tick", "@every 1s", "ticks")
    with Runner(store) as r:
        wait_until(lambda: pending(store, "ticks") >= 1, what="a first fire")
        n = pending(store, "ticks")
        wait_until(lambda: pending(store, "ticks") > n, what="a fresh fire")
        # Right after a tick: 31 s later on the runner's own clock its lease
        # has lapsed and 31 boundaries are due. It must renew first, fail,
        # and fire none of them.
        fired = pending(store, "ticks")
        store._advance_clock(31)
        r.thread.join(10)
        assert isinstance(r.error, alkstore.LeadershipLost)
    assert pending(store, "ticks") == fired


def test_stop_releases_the_lease_to_a_standby_at_once(
    store: alkstore.Store, store_factory: Callable[..., alkstore.Store]
) -> None:
    store.schedule("tick", "@every 1s", "ticks")
    first = next_fire(store, "tick")
    with Runner(store) as leader:
        wait_until(lambda: pending(store, "ticks") >= 1, what="the leader to fire")
        with Runner(store_factory()) as standby:
            time.sleep(0.5)
            leader.finish()
            assert leader.returned and leader.error is None
            n = pending(store, "ticks")
            # Within seconds, not after the 30 s lease.
            wait_until(lambda: pending(store, "ticks") >= n + 2, timeout=6, what="the standby to lead")
            standby.finish()
    assert_each_boundary_fired_once(store, first)


def test_a_schedule_change_wakes_the_leader(
    store: alkstore.Store, store_factory: Callable[..., alkstore.Store]
) -> None:
    waiter = store_factory(poll_interval_s=60)
    with Runner(waiter) as r:
        time.sleep(0.5)  # leading with nothing scheduled: it sleeps until its renewal
        started = time.monotonic()
        store.schedule("tick", "@every 1s", "ticks")  # through another handle
        wait_until(lambda: pending(store, "ticks") >= 1, timeout=8, what="the first fire")
        assert time.monotonic() - started < 4, "woken by the commit, not by the 10 s renewal"
        r.finish()


def test_close_ends_a_leader_and_a_standby(
    store: alkstore.Store, store_factory: Callable[..., alkstore.Store]
) -> None:
    store.schedule("far", "@every 1d", "q")
    other = store_factory()
    leader = Runner(store).start()
    time.sleep(0.5)
    standby = Runner(other).start()
    time.sleep(0.5)
    for s, r in [(store, leader), (other, standby)]:
        started = time.monotonic()
        s.close()
        r.thread.join(10)
        assert not r.thread.is_alive()
        assert isinstance(r.error, alkstore.StoreClosed)
        assert time.monotonic() - started < 5
    with pytest.raises(alkstore.StoreClosed):
        store.run_schedules(alkstore.StopToken())


def test_stop_before_start_returns_at_once(store: alkstore.Store) -> None:
    stop = alkstore.StopToken()
    stop.stop()
    started = time.monotonic()
    store.run_schedules(stop)
    assert time.monotonic() - started < 2


def test_arun_schedules_stop_and_cancel(
    store: alkstore.Store, store_factory: Callable[..., alkstore.Store]
) -> None:
    store.schedule("tick", "@every 1h", "ticks")
    store._advance_clock(3600)

    async def main() -> None:
        stop = alkstore.StopToken()
        task: asyncio.Future[None] = asyncio.ensure_future(store.arun_schedules(stop))
        while pending(store, "ticks") < 1:  # the event loop keeps running meanwhile
            await asyncio.sleep(0.02)
        stop.stop()
        await asyncio.wait_for(task, 10)
        cancelled: asyncio.Future[None] = asyncio.ensure_future(store.arun_schedules())
        await asyncio.sleep(0.5)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled

    asyncio.run(main())
    # The cancelled runner released the lease: another handle leads at once.
    other = store_factory()  # its own clock, not advanced
    other.schedule("t2", "@every 1s", "t2")
    with Runner(other) as r:
        wait_until(lambda: pending(other, "t2") >= 1, timeout=6, what="a new leader to fire")
        r.finish()


def test_ctrl_c_interrupts_run_schedules(store: alkstore.Store, target: Target) -> None:
    store.schedule("tick", "@every 1s", "ticks")
    with spawn("scheduler.py", *target.argv()) as proc:
        assert read_line(proc) == "running"
        wait_until(lambda: pending(store, "ticks") >= 1, what="the helper to lead")
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert read_line(proc, timeout=10) == "interrupted"
        assert proc.wait(10) == 130
        assert time.monotonic() - started < 5
    # An interrupted leader hands the lease over rather than leaving it to lapse.
    n = pending(store, "ticks")
    with Runner(store) as r:
        wait_until(lambda: pending(store, "ticks") >= n + 1, timeout=6, what="a new leader to fire")
        r.finish()
