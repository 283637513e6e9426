"""alkstore.Worker (SPEC §11): outcomes, concurrency, shutdown, signals."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import alkstore
from alkstore import JobHandle, StopToken, Store, Worker
from tests.conftest import Target
from tests.workers import running, wait_for

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer

HELPERS = os.path.join(os.path.dirname(__file__), "helpers")


def helpers_path() -> str:
    """PYTHONPATH for a child that imports the helper apps (and whatever alkstore we import)."""
    return os.pathsep.join(p for p in [HELPERS, os.environ.get("PYTHONPATH", "")] if p)


def fast_queue(store: Store, name: str, **options: Any) -> alkstore.Queue:
    options.setdefault("backoff_base_s", 0)  # retries are ready at once
    return store.queue(name, **options)


# -- outcomes ----------------------------------------------------------------


def test_sync_handler_return_ack_exception_retry_fail_dead(store: Store) -> None:
    q = fast_queue(store, "emails", max_attempts=3)
    ok = q.enqueue({"kind": "ok"})
    flaky = q.enqueue({"kind": "flaky"})
    doomed = q.enqueue({"kind": "doomed"})
    attempts: dict[int, list[int]] = {}
    worker = Worker(store, concurrency=2, worker_id="w-sync")

    @worker.handler("emails")
    def handle(payload: dict[str, str], job: JobHandle) -> None:
        attempts.setdefault(job.id, []).append(job.attempts)
        if payload["kind"] == "flaky" and job.attempts == 1:
            raise ConnectionError("smtp timeout")
        if payload["kind"] == "doomed":
            raise alkstore.Fail("mailbox does not exist")

    with running(worker):
        wait_for(lambda: worker.counts.acked == 2 and worker.counts.dead == 1, what="three outcomes")
    assert q.get_job(ok) is None and q.get_job(flaky) is None
    assert attempts[flaky] == [1, 2]
    dead = q.get_job(doomed)
    assert dead is not None and dead.state == "dead"
    assert dead.last_error == "mailbox does not exist"
    assert attempts[doomed] == [1], "Fail dead-letters at once, without retries"
    c = worker.counts
    assert (c.acked, c.retried, c.dead, c.lost, c.released, c.in_flight) == (2, 1, 1, 0, 0, 0)


def test_async_handler_return_ack_exception_retry_fail_dead(store: Store) -> None:
    q = fast_queue(store, "hooks", max_attempts=3)
    ok = q.enqueue("ok")
    flaky = q.enqueue("flaky")
    doomed = q.enqueue("doomed")
    loops: set[int] = set()
    worker = Worker(store, concurrency=3)

    @worker.handler("hooks")
    async def handle(payload: str, job: JobHandle) -> None:
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0.01)
        if payload == "flaky" and job.attempts == 1:
            raise TimeoutError("slow endpoint")
        if payload == "doomed":
            raise alkstore.Fail("410 gone")

    with running(worker):
        wait_for(lambda: worker.counts.acked == 2 and worker.counts.dead == 1, what="three outcomes")
    assert q.get_job(ok) is None and q.get_job(flaky) is None
    dead = q.get_job(doomed)
    assert dead is not None and dead.last_error == "410 gone"
    assert worker.counts.retried == 1
    assert len(loops) == 1, "async handlers share one event loop"


def test_exception_on_the_last_attempt_goes_dead_with_its_repr(store: Store) -> None:
    q = fast_queue(store, "q", max_attempts=2)
    job_id = q.enqueue(None)
    worker = Worker(store, concurrency=1)

    @worker.handler("q")
    def handle(_payload: None, _job: JobHandle) -> None:
        raise ValueError("bad input")

    with running(worker):
        wait_for(lambda: worker.counts.dead == 1)
    dead = q.get_job(job_id)
    assert dead is not None and dead.state == "dead" and dead.attempts == 2
    assert dead.last_error == repr(ValueError("bad input"))
    assert worker.counts.retried == 1


def test_handlers_on_several_queues_all_run(store: Store) -> None:
    names = ["a", "b", "c"]
    for name in names:
        store.queue(name).enqueue_many([{"q": name, "i": i} for i in range(5)])
    seen: list[str] = []
    lock = threading.Lock()
    worker = Worker(store, concurrency=2)
    for name in names:

        @worker.handler(name)
        def handle(payload: dict[str, Any], _job: JobHandle) -> None:
            with lock:
                seen.append(payload["q"])

    with running(worker):
        wait_for(lambda: worker.counts.acked == 15)
    assert sorted(seen) == sorted(n for n in names for _ in range(5))


def test_jobs_enqueued_while_idle_wake_the_worker(store: Store) -> None:
    done = threading.Event()
    worker = Worker(store, concurrency=1)

    @worker.handler("late")
    def handle(_payload: object, _job: JobHandle) -> None:
        done.set()

    @worker.handler("other")
    def other(_payload: object, _job: JobHandle) -> None:
        pass

    with running(worker):
        time.sleep(0.3)  # the worker is now waiting on both queues
        store.queue("late").enqueue(1)
        assert done.wait(5), "a commit did not wake the waiting worker"


def test_heartbeats_keep_a_slow_handler_s_lease(store: Store) -> None:
    q = store.queue("slow", visibility_timeout_s=2)
    job_id = q.enqueue(None)
    worker = Worker(store, concurrency=1)

    @worker.handler("slow")
    def handle(_payload: None, _job: JobHandle) -> None:
        time.sleep(3.5)  # past the 2 s lease: only heartbeats keep it

    with running(worker):
        wait_for(lambda: worker.counts.acked + worker.counts.lost == 1, timeout=20)
    assert worker.counts.acked == 1
    assert q.get_job(job_id) is None


def test_one_heartbeat_thread_keeps_every_running_job_s_lease(store: Store) -> None:
    """Four slow jobs with 2 s leases and different start times, all kept alive by
    the process's one heartbeat thread; a claimer that tries meanwhile gets nothing."""
    q = store.queue("slow4", visibility_timeout_s=2)
    ids = q.enqueue_many([0.0, 0.4, 0.8, 1.2])
    worker = Worker(store, concurrency=4)
    beaters: list[int] = []

    @worker.handler("slow4")
    def handle(offset: float, _job: JobHandle) -> None:
        time.sleep(offset)
        beaters.append(sum(t.name == "alkstore-heartbeat" for t in threading.enumerate()))
        time.sleep(3.5 - offset)  # past the 2 s lease: only heartbeats keep it

    with running(worker):
        time.sleep(2.8)
        assert q.claim("thief") is None, "a lease lapsed while its job ran"
        wait_for(lambda: worker.counts.acked + worker.counts.lost == 4, timeout=20)
    assert worker.counts.acked == 4
    assert all(q.get_job(i) is None for i in ids)
    assert beaters == [1, 1, 1, 1], "one timetable thread, not one per job"


def test_a_busy_queue_does_not_starve_another(store: Store) -> None:
    """A finishing handler claims the next job itself, trying the queues in turn:
    with 100 jobs on one queue and 10 on another, the 10 do not wait for the 100."""
    store.queue("busy").enqueue_many(list(range(100)))
    store.queue("quiet").enqueue_many(list(range(10)))
    order: list[str] = []
    worker = Worker(store, concurrency=1)

    @worker.handler("busy")
    def busy(_payload: int, _job: JobHandle) -> None:
        order.append("busy")

    @worker.handler("quiet")
    def quiet(_payload: int, _job: JobHandle) -> None:
        order.append("quiet")

    with running(worker):
        wait_for(lambda: worker.counts.acked == 110, timeout=60, what="all 110 jobs")
    last_quiet = max(i for i, q in enumerate(order) if q == "quiet")
    assert last_quiet < 40, f"the quiet queue's last job ran {last_quiet + 1}th of 110"


# -- concurrency ---------------------------------------------------------------


def test_concurrency_is_never_exceeded_over_sync_and_async_handlers(store: Store) -> None:
    store.queue("s").enqueue_many(list(range(12)))
    store.queue("a").enqueue_many(list(range(12)))
    lock = threading.Lock()
    now = 0
    peak = 0

    def enter() -> None:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)

    def leave() -> None:
        nonlocal now
        with lock:
            now -= 1

    worker = Worker(store, concurrency=3)

    @worker.handler("s")
    def sync_handler(_payload: int, _job: JobHandle) -> None:
        enter()
        time.sleep(0.05)
        leave()

    @worker.handler("a")
    async def async_handler(_payload: int, _job: JobHandle) -> None:
        enter()
        await asyncio.sleep(0.05)
        leave()

    in_flight_seen: list[int] = []
    with running(worker):
        while worker.counts.acked < 24:
            in_flight_seen.append(worker.counts.in_flight)
            time.sleep(0.005)
            assert len(in_flight_seen) < 10_000, "jobs did not finish"
    assert peak <= 3
    assert max(in_flight_seen) <= 3
    assert peak >= 2, "handlers ran one at a time"


# -- shutdown ----------------------------------------------------------------


def test_stop_waits_for_an_in_flight_handler_within_the_grace(store: Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue(None)
    started = threading.Event()
    worker = Worker(store, concurrency=1, grace_s=10)

    @worker.handler("q")
    def handle(_payload: None, _job: JobHandle) -> None:
        started.set()
        time.sleep(0.5)

    with running(worker) as stop:
        assert started.wait(5)
        stop.stop()
    assert q.get_job(job_id) is None, "the handler finished and its ack landed"
    assert worker.counts.acked == 1 and worker.counts.released == 0


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_handler_still_running_after_the_grace_is_released_not_dead(store: Store, kind: str) -> None:
    q = store.queue("q", max_attempts=1)
    job_id = q.enqueue({"n": 1})
    started = threading.Event()
    finish = threading.Event()
    worker = Worker(store, concurrency=2, grace_s=0.3)
    if kind == "sync":

        @worker.handler("q")
        def handle(_payload: object, _job: JobHandle) -> None:
            started.set()
            finish.wait(20)

    else:

        @worker.handler("q")
        async def ahandle(_payload: object, _job: JobHandle) -> None:
            started.set()
            await asyncio.sleep(20)

    with running(worker) as stop:
        assert started.wait(5)
        t0 = time.monotonic()
        stop.stop()
    assert time.monotonic() - t0 < 5, "run() waited far past grace_s"
    job = q.get_job(job_id)
    assert job is not None and job.state == "pending", "released back to pending"
    assert job.attempts == 0, "the attempt was refunded"
    assert worker.counts.released == 1 and worker.counts.dead == 0
    finish.set()
    # The released job can be claimed again at once.
    again = q.claim("someone-else")
    assert again is not None and again.id == job_id and again.attempts == 1


def test_signal_handlers_are_installed_on_the_main_thread_and_restored(store: Store) -> None:
    store.queue("q")
    worker = Worker(store, concurrency=1)
    seen: list[object] = []

    @worker.handler("q")
    def handle(_payload: object, _job: JobHandle) -> None:
        pass

    def during() -> None:
        seen.append(signal.getsignal(signal.SIGTERM))
        stop.stop()

    before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))
    stop = StopToken()
    timer = threading.Timer(0.3, during)
    timer.start()
    worker.run(stop)  # on the main thread
    timer.join()
    assert seen and seen[0] is not before[0], "run() installed its own SIGTERM handler"
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_worker_stop_method_stops_a_run(store: Store) -> None:
    worker = Worker(store, concurrency=1)

    @worker.handler("q")
    def handle(_payload: object, _job: JobHandle) -> None:
        pass

    t = threading.Thread(target=worker.run, daemon=True)
    t.start()
    wait_for(lambda: worker.running)
    worker.stop()
    t.join(10)
    assert not t.is_alive() and not worker.running


def test_closing_the_store_makes_run_raise_store_closed(store_factory: Callable[..., Store]) -> None:
    own = store_factory()
    worker = Worker(own, concurrency=1)

    @worker.handler("q")
    def handle(_payload: object, _job: JobHandle) -> None:
        pass

    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run()
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    time.sleep(0.3)
    own.close()
    t.join(10)
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], alkstore.StoreClosed)


@pytest.mark.slow
def test_sigterm_to_a_worker_process_finishes_the_in_flight_job_and_exits_0(
    target: Target, store: Store
) -> None:
    q = store.queue("app")
    job_id = q.enqueue({"sleep": 1.0})
    env = dict(
        os.environ, APP_TARGET=target.location, APP_SCHEMA=target.schema or "", PYTHONPATH=helpers_path()
    )
    with subprocess.Popen(
        [sys.executable, "-m", "alkstore", "worker", "worker_app:worker", "--status-every", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=HELPERS,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.strip() == f"started {job_id}", line
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    assert f"done {job_id}" in out
    assert "Traceback" not in err
    assert "1 acked" in err and "stopped" in err
    assert q.get_job(job_id) is None, "the in-flight job finished and was acked"


# -- validation ----------------------------------------------------------------


def test_constructor_and_registration_validate_their_arguments(store: Store) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        Worker(store, concurrency=0)
    with pytest.raises(TypeError, match="concurrency"):
        Worker(store, concurrency="4")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="concurrency"):
        Worker(store, concurrency=True)
    with pytest.raises(ValueError, match="grace_s"):
        Worker(store, grace_s=-1)
    with pytest.raises(TypeError, match="store"):
        Worker("app.db")  # type: ignore[arg-type]
    with pytest.raises(alkstore.InvalidName):
        Worker(store, worker_id="")
    with pytest.raises(alkstore.InvalidName):
        Worker(store, worker_id="__alkstore_me")
    with pytest.raises(alkstore.InvalidName):
        Worker(store, worker_id="x" * 201)
    worker = Worker(store)
    assert worker.worker_id == f"{socket.gethostname()}-{os.getpid()}"
    with pytest.raises(alkstore.InvalidName):
        worker.handler("")
    with pytest.raises(alkstore.InvalidName):
        worker.handler("__alkstore_outbox:x")
    with pytest.raises(ValueError, match="max_attempts"):
        worker.handler("q", max_attempts=0)
    with pytest.raises(ValueError, match="no handlers"):
        worker.run()
    with pytest.raises(TypeError, match="callable"):
        worker.handler("q")(42)  # type: ignore[type-var]

    @worker.handler("q", max_attempts=5)
    def handle(_payload: object, _job: JobHandle) -> None:
        pass

    with pytest.raises(ValueError, match="already has a handler"):
        worker.handler("q")(handle)
    assert worker.queues == ["q"]
    job_id = worker.queue("q").enqueue(None)
    job = worker.queue("q").get_job(job_id)
    assert job is not None and job.max_attempts == 5, "the handler's options stamp what its handle enqueues"
    with pytest.raises(ValueError, match="concurrency"):
        worker.concurrency = 0


def test_a_sync_handler_returning_a_coroutine_is_retried_not_acked(store: Store) -> None:
    q = store.queue("q", max_attempts=1)
    job_id = q.enqueue(None)
    worker = Worker(store, concurrency=1)

    async def work() -> None:
        pass

    @worker.handler("q")
    def handle(_payload: object, _job: JobHandle) -> Any:
        return work()  # forgot `async def` on the handler

    with running(worker):
        wait_for(lambda: worker.counts.dead == 1)
    dead = q.get_job(job_id)
    assert dead is not None and "async def" in (dead.last_error or "")


@pytest.mark.parametrize("exc_type", [SystemExit, KeyboardInterrupt])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_handler_raising_system_exit_is_retried_and_the_worker_goes_on(
    store: Store, kind: str, exc_type: type[BaseException]
) -> None:
    """Before: raised from an async handler, these stopped the worker's event loop
    and its slots stayed taken (0 of 5 later jobs ran). Now, as for a sync handler,
    the job is retried on the curve (here: dead, at its only attempt)."""
    q = fast_queue(store, "q", max_attempts=1)
    boom = q.enqueue("boom")
    q.enqueue_many(["ok"] * 5)
    worker = Worker(store, concurrency=2, grace_s=1)

    def outcome(payload: str) -> None:
        if payload == "boom":
            raise exc_type("handler wants out")

    if kind == "sync":

        @worker.handler("q")
        def handle_sync(payload: str, _job: JobHandle) -> None:
            outcome(payload)
    else:

        @worker.handler("q")
        async def handle_async(payload: str, _job: JobHandle) -> None:
            await asyncio.sleep(0)
            outcome(payload)

    with running(worker):
        wait_for(lambda: worker.counts.acked == 5 and worker.counts.dead == 1, what="the later jobs")
    dead = q.get_job(boom)
    assert dead is not None and dead.state == "dead"
    assert dead.last_error == repr(exc_type("handler wants out"))
    assert worker.counts.lost == 0


@pytest.mark.parametrize(("how", "counted"), [("ack_tx", "acked"), ("retry", "retried"), ("fail", "dead")])
def test_an_outcome_the_handler_settled_itself_is_counted_not_lost(
    store: Store, how: str, counted: str
) -> None:
    """Transactional completion (`job.ack(tx=tx)`) or a deliberate `retry`/`fail` by the
    handler: the worker's own ack afterwards finds nothing to do. Before, that was
    counted as `lost`."""
    q = store.queue("q", max_attempts=3)
    job_id = q.enqueue({})
    worker = Worker(store, concurrency=1)

    @worker.handler("q")
    def handle(_payload: object, job: JobHandle) -> None:
        if how == "ack_tx":
            with store.transaction() as tx:
                assert job.ack(tx=tx)
        elif how == "retry":
            assert job.retry("not yet", delay=3600)
        else:
            assert job.fail("never")

    def settled() -> int:
        c = worker.counts
        return c.acked + c.retried + c.dead + c.lost + c.released

    with running(worker):
        wait_for(lambda: settled() == 1, what="the outcome")
    c = worker.counts
    assert c.lost == 0
    assert getattr(c, counted) == 1
    job = q.get_job(job_id)
    if how == "ack_tx":
        assert job is None
    else:
        assert job is not None and job.state == ("pending" if how == "retry" else "dead")


# -- the next job claimed with the ack (ADR 0022) --------------------------------


def test_a_lapsed_lease_is_reclaimed_while_ready_jobs_keep_the_worker_busy(store: Store) -> None:
    # A finished handler acks and claims the next ready job in one transaction,
    # with the claim's fast path, which stands aside while a lease has lapsed:
    # the lapsed job must still be run, not starved by the ready ones.
    q = fast_queue(store, "busy", visibility_timeout_s=1)
    lapsed = q.enqueue({"n": -1})
    taken = q.claim("gone-away")
    assert taken is not None and taken.id == lapsed
    ready = q.enqueue_many([{"n": i} for i in range(200)])
    time.sleep(1.2)  # the first lease lapses
    seen: list[int] = []
    worker = Worker(store, concurrency=1, worker_id="w-busy")

    @worker.handler("busy")
    def handle(payload: dict[str, int], job: JobHandle) -> None:
        seen.append(job.id)

    with running(worker):
        wait_for(lambda: worker.counts.acked == 201, what="all 201 jobs acked")
    assert sorted(seen) == sorted([lapsed, *ready]), "each job ran once"
    assert q.stats().pending + q.stats().processing == 0
    assert not taken.ack(), "the lapsed handle was fenced by the reclaim"


def test_jobs_of_several_queues_all_run_when_each_ack_claims_the_next(store: Store) -> None:
    queues = [fast_queue(store, f"multi-{i}") for i in range(3)]
    ids = {q.name: set(q.enqueue_many([{"q": q.name, "i": i} for i in range(40)])) for q in queues}
    seen: dict[str, set[int]] = {q.name: set() for q in queues}
    worker = Worker(store, concurrency=2, worker_id="w-multi")
    for q in queues:

        @worker.handler(q.name)
        def handle(payload: dict[str, Any], job: JobHandle) -> None:
            seen[job.queue].add(job.id)

    with running(worker):
        wait_for(lambda: worker.counts.acked == 120, what="all 120 jobs acked")
    assert seen == ids
    assert worker.counts.lost == 0 and worker.counts.retried == 0
