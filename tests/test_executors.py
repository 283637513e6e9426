"""The Worker's sync executor (``alkstore._executors``): a ``Call`` runs once,
cancels only before it starts, hands its result or exception to ``result()``,
and a done-callback that raises does not cost the pool its thread."""

from __future__ import annotations

import gc
import logging
import threading
import weakref
from concurrent.futures import CancelledError
from typing import Any

import pytest

from alkstore._executors import Call, ThreadPool


def test_a_call_hands_over_its_result_or_its_exception() -> None:
    pool = ThreadPool(2, "t-exec")
    got: list[object] = []
    done = threading.Event()

    def record(c: Call[Any]) -> None:
        try:
            got.append(c.result())
        except BaseException as exc:
            got.append(exc)
        if len(got) == 2:
            done.set()

    pool.submit(lambda: 42).add_done_callback(record)
    pool.submit(lambda: 1 // 0).add_done_callback(record)
    assert done.wait(5)
    pool.shutdown()
    assert 42 in got
    assert any(isinstance(x, ZeroDivisionError) for x in got)


def test_a_call_cancelled_before_it_starts_never_runs_and_reports_cancelled() -> None:
    ran = []
    call: Call[None] = Call(lambda: ran.append(1))
    seen: list[Call[None]] = []
    call.add_done_callback(seen.append)
    assert call.cancel()
    assert call.cancel(), "cancelling twice still says cancelled"
    call.run()
    assert ran == [], "a cancelled call does not run"
    assert seen == [call], "the callback ran once, at the cancel"
    with pytest.raises(CancelledError):
        call.result()


def test_a_running_or_finished_call_cannot_be_cancelled() -> None:
    inside = threading.Event()
    leave = threading.Event()

    def work() -> str:
        inside.set()
        leave.wait(5)
        return "ok"

    call: Call[str] = Call(work)
    t = threading.Thread(target=call.run)
    t.start()
    assert inside.wait(5)
    assert not call.cancel(), "it is running"
    leave.set()
    t.join(5)
    assert not call.cancel(), "it finished"
    assert call.result() == "ok"
    late: list[Call[str]] = []
    call.add_done_callback(late.append)
    assert late == [call], "a callback added after the end runs at once"


def test_a_raising_callback_is_logged_and_the_pool_thread_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    pool = ThreadPool(1, "t-exec-raise")
    second = threading.Event()

    def boom(_: Call[None]) -> None:
        raise RuntimeError("callback failed")

    with caplog.at_level(logging.ERROR, logger="alkstore.worker"):
        pool.submit(lambda: None).add_done_callback(boom)
        pool.submit(second.set)
        assert second.wait(5), "the only pool thread survived the raising callback"
    pool.shutdown()
    assert any("done-callback raised" in r.getMessage() for r in caplog.records)


def test_a_finished_call_keeps_neither_its_function_nor_its_callback() -> None:
    # The Worker's in-flight record holds the call, and the call's function and
    # callback hold the record: kept, that is a cycle per job for the garbage
    # collector to find.
    class Record:
        call: Call[None] | None = None

    def in_flight() -> tuple[weakref.ref[Record], Call[None]]:
        rec = Record()

        def work() -> None:  # like the Worker's: it refers to the record
            assert rec is not None

        def done(_: Call[None]) -> None:
            assert rec is not None

        call: Call[None] = Call(work)
        rec.call = call
        call.add_done_callback(done)
        return weakref.ref(rec), call

    gc.disable()
    try:
        ref, call = in_flight()
        assert ref() is not None, "the call's function and callback hold the record"
        call.run()
        del call
        assert ref() is None, "freed by reference counting alone, with no collection"
    finally:
        gc.enable()


def test_a_hand_off_runs_next_on_the_thread_that_made_it() -> None:
    # A finished job's successor (submit(here=True) from a call on a pool
    # thread) runs on that thread after the call returns, even while other
    # threads of the pool wait on the shared queue; from any other thread
    # `here` is ignored and the call goes through the shared queue.
    pool = ThreadPool(4, "t-here")
    ran: dict[str, str] = {}
    early: list[bool] = []
    done = threading.Event()
    warm = threading.Barrier(4)

    def idle() -> None:  # make the pool's other threads exist, then wait on the queue
        warm.wait(5)

    for _ in range(3):
        pool.submit(idle)
    warm.wait(5)

    def second() -> None:
        ran["second"] = threading.current_thread().name
        done.set()

    def first() -> None:
        ran["first"] = threading.current_thread().name
        pool.submit(second, here=True)
        # Through the shared queue, one of the three idle threads would run
        # it at once; handed here, it cannot start before this returns.
        early.append(done.wait(0.3))

    outside = threading.Event()
    pool.submit(outside.set, here=True)
    assert outside.wait(5), "from outside the pool, `here` still runs it on a pool thread"
    pool.submit(first)
    assert done.wait(5)
    pool.shutdown()
    assert early == [False], "the hand-off waited for the call that made it"
    assert ran["second"] == ran["first"], ran
