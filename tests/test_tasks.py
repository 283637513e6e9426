"""Tasks: functions as the unit of work (SPEC §22), on both engines.

Registration, the payload a task's job carries, argument binding and JSON
checks at enqueue time (nothing written on a bad call), enqueue options, and a
Worker made by the registry routing each job to its task.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import alkstore
from alkstore import Store, Tasks
from tests.workers import running, wait_for


def test_a_task_is_a_function_called_inline_and_a_job_when_enqueued(store: Store) -> None:
    tasks = Tasks(store)
    done: list[tuple[str, str]] = []

    @tasks.task(queue="emails", max_attempts=5)
    def send_email(to: str, subject: str = "hi") -> str:
        done.append((to, subject))
        return "sent"

    assert send_email("ada@example.com") == "sent", "a plain call runs it here"
    assert done == [("ada@example.com", "hi")]
    here = "test_a_task_is_a_function_called_inline_and_a_job_when_enqueued"
    assert send_email.name == f"{__name__}.{here}.<locals>.send_email", "module.qualname"
    job_id = send_email.enqueue("bob@example.com", subject="welcome")
    job = store.queue("emails").get_job(job_id)
    assert job is not None and job.max_attempts == 5
    assert job.payload == {
        "task": send_email.name,
        "args": ["bob@example.com"],
        "kwargs": {"subject": "welcome"},
    }
    assert tasks[send_email.name] is send_email and send_email.name in tasks
    assert tasks.queues == ["emails"] and list(tasks) == [send_email]


def test_a_bad_call_is_a_type_error_naming_the_task_and_writes_nothing(store: Store) -> None:
    tasks = Tasks(store)

    @tasks.task(name="mail.send", queue="emails")
    def send(to: str, *, when: datetime | None = None) -> None: ...

    with pytest.raises(TypeError, match=r"task 'mail.send': missing a required argument: 'to'"):
        send.enqueue()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"task 'mail.send': .*unexpected keyword argument 'cc'"):
        send.enqueue("a@b", cc="c@d")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"kwargs\.when is not JSON-serialisable: object of type datetime"):
        send.enqueue("a@b", when=datetime.now(UTC))
    with pytest.raises(TypeError, match=r"args\[0\]\.to\[1\] is not JSON-serialisable: object of type set"):
        send.enqueue({"to": ["a", {1}]})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"kwargs\.when is NaN: NaN and Infinity"):
        send.enqueue("a@b", when=float("nan"))  # type: ignore[arg-type]
    assert store.queues() == [], "nothing was written"
    with pytest.raises(ValueError, match="delay"):
        send.options(delay=-1).enqueue("a@b")
    assert store.queues() == []


def test_options_reach_the_job(store: Store) -> None:
    tasks = Tasks(store)

    @tasks.task(queue="reports")
    def build(kind: str) -> None: ...

    later = build.options(delay=60, priority=5).enqueue("daily")
    q = store.queue("reports")
    job = q.get_job(later)
    assert job is not None and job.priority == 5 and q.stats().scheduled == 1
    first = build.options(unique_key="yearly").enqueue("yearly")
    assert build.options(unique_key="yearly").enqueue("yearly") == first, "the live key's job"
    at = datetime.now(UTC) + timedelta(hours=2)
    scheduled = q.get_job(build.options(run_at=at, expires=3600).enqueue("x"))
    assert scheduled is not None and scheduled.expires_at is not None
    assert abs((scheduled.run_at - at).total_seconds()) <= 1
    with store.transaction() as tx:
        kept = build.options(tx=tx).enqueue("in tx")
    assert q.get_job(kept) is not None
    with pytest.raises(RuntimeError), store.transaction() as tx:
        gone = build.options(tx=tx).enqueue("rolled back")
        raise RuntimeError("roll back")
    assert q.get_job(gone) is None


def test_aenqueue_enqueues_from_asyncio(store: Store) -> None:
    tasks = Tasks(store)

    @tasks.task(queue="q")
    def f(n: int) -> None: ...

    async def main() -> tuple[int, int]:
        return await f.aenqueue(1), await f.options(delay=30).aenqueue(2)

    a, b = asyncio.run(main())
    q = store.queue("q")
    ready, later = q.get_job(a), q.get_job(b)
    assert ready is not None and ready.payload["args"] == [1]
    assert later is not None and later.payload["args"] == [2]
    assert (q.stats().pending, q.stats().scheduled) == (1, 1)


def test_registration_is_checked_when_it_happens(store: Store) -> None:
    tasks = Tasks(store)
    with pytest.raises(alkstore.InvalidName):
        tasks.task(queue="")
    with pytest.raises(ValueError, match="max_attempts"):
        tasks.task(max_attempts=0)
    with pytest.raises(ValueError, match="timeout must be more than 0"):
        tasks.task(timeout=0)

    @tasks.task(name="same")
    def one() -> None: ...

    with pytest.raises(ValueError, match="'same' is already registered"):
        tasks.task(name="same")(lambda: None)
    unbound = Tasks()
    late = unbound.task(name="late")(lambda: None)
    with pytest.raises(RuntimeError, match="no store yet"):
        late.enqueue()
    unbound.bind(store)
    assert isinstance(late.enqueue(), int)


def test_the_registry_worker_runs_each_job_through_its_task(store: Store) -> None:
    tasks = Tasks(store)
    seen: list[object] = []
    done = threading.Event()

    @tasks.task(queue="shared")
    def add(a: int, b: int) -> int:
        seen.append(("add", a + b))
        return a + b

    @tasks.task(queue="shared")
    async def greet(name: str) -> None:
        await asyncio.sleep(0)
        seen.append(("greet", name))

    @tasks.task(queue="other")
    def last() -> None:
        seen.append("last")
        done.set()

    add.enqueue(2, 3)
    greet.enqueue("ada")
    last.enqueue()
    worker = tasks.worker(concurrency=2)
    assert sorted(worker.queues) == ["other", "shared"]
    with running(worker):
        wait_for(lambda: worker.counts.acked == 3)
    assert sorted(map(str, seen)) == sorted(map(str, [("add", 5), ("greet", "ada"), "last"]))
    assert store.queue("shared").stats().pending == 0


def test_a_job_whose_task_no_worker_knows_is_retried_never_dropped(store: Store) -> None:
    tasks = Tasks(store)

    @tasks.task(queue="q")
    def known() -> None: ...

    q = store.queue("q", max_attempts=2)
    stranger = q.enqueue({"task": "gone.away", "args": [], "kwargs": {}})
    plain = q.enqueue({"not": "a task"})
    worker = tasks.worker(concurrency=1)
    with running(worker):
        wait_for(lambda: worker.counts.retried == 2)
    job = q.get_job(stranger)
    assert job is not None and (job.state, job.attempts) == ("pending", 1), "retried, not acked or dropped"
    store._advance_clock(3600)
    with running(worker):
        wait_for(lambda: q.stats().dead == 2)
    gone = q.get_job(stranger)
    assert gone is not None and gone.state == "dead" and gone.last_error == "unknown task 'gone.away'"
    other = q.get_job(plain)
    assert other is not None and other.last_error is not None and "not a task's payload" in other.last_error


def test_current_job_is_the_running_job(store: Store) -> None:
    tasks = Tasks(store)
    ids: list[int] = []

    @tasks.task(queue="q")
    def who() -> None:
        ids.append(alkstore.current_job().id)

    job_id = who.enqueue()
    worker = tasks.worker(concurrency=1)
    with running(worker):
        wait_for(lambda: worker.counts.acked == 1)
    assert ids == [job_id]
    with pytest.raises(LookupError, match="no alkstore job is running here"):
        alkstore.current_job()


def scale(factor: int, n: int) -> int:
    return factor * n


async def ascale(factor: int, n: int) -> int:
    await asyncio.sleep(0)
    return factor * n


class Scaler:
    """A callable object: no ``__qualname__`` of its own, as a partial has none."""

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, n: int) -> int:
        return self.factor * n


class AsyncScaler(Scaler):
    async def __call__(self, n: int) -> int:  # type: ignore[override]
        await asyncio.sleep(0)
        return self.factor * n


def test_a_partial_or_a_callable_object_must_be_given_a_name(store: Store) -> None:
    tasks = Tasks(store)
    nameless: list[object] = [
        functools.partial(scale, 2),
        functools.partial(ascale, 2),
        Scaler(2),
        AsyncScaler(2),
    ]
    for fn in nameless:
        with pytest.raises(TypeError, match=r'has no __qualname__ to name its task by: pass name="\.\.\."'):
            tasks.task(fn)  # type: ignore[call-overload]
        with pytest.raises(TypeError, match=r"pass name="):
            tasks.task(queue="q")(fn)  # type: ignore[arg-type]
    assert len(tasks) == 0 and store.queues() == [], "nothing registered, nothing written"


def test_named_partials_and_callable_objects_run_sync_and_async(store: Store) -> None:
    tasks = Tasks(store)
    made: list[alkstore.Task[..., Any]] = [
        tasks.task(name="scale.partial", queue="q")(functools.partial(scale, 2)),
        tasks.task(name="scale.apartial", queue="q")(functools.partial(ascale, 3)),
        tasks.task(name="scale.object", queue="q")(Scaler(4)),
        tasks.task(name="scale.aobject", queue="q")(AsyncScaler(5)),
        tasks.task(name="scale.apartial_object", queue="q")(functools.partial(AsyncScaler(6))),
    ]
    ids = [t.options(keep_result=3600).enqueue(10) for t in made]
    worker = tasks.worker(concurrency=2)
    with running(worker):
        wait_for(lambda: worker.counts.acked + worker.counts.retried >= len(ids))
    assert (worker.counts.acked, worker.counts.retried) == (5, 0), worker.counts
    results = [store.result(i) for i in ids]
    assert [r.value if r is not None else None for r in results] == [20, 30, 40, 50, 60]


def test_a_periodic_task_is_checked_when_it_is_decorated(store: Store) -> None:
    tasks = Tasks(store)
    with pytest.raises(alkstore.InvalidSpec, match="never"):
        tasks.periodic("0 0 30 2 *")  # February 30th
    with pytest.raises(alkstore.InvalidSpec):
        tasks.periodic("*/5 * * *")  # four fields
    with pytest.raises(ValueError, match="tz must be an IANA time zone name"):
        tasks.periodic("0 9 * * *", tz="Mars/Olympus_Mons")

    def needs(x: int) -> None: ...

    def keyword_only(*, x: int) -> None: ...

    for fn in (needs, keyword_only):
        with pytest.raises(TypeError, match=r"periodic task .*no arguments, but missing a required"):
            tasks.periodic("@every 1m")(fn)  # type: ignore[arg-type]
    with pytest.raises(alkstore.InvalidName):
        tasks.periodic("@every 1m", name="x" * 201)(lambda: None)
    assert len(tasks) == 0, "a refused decoration registers nothing"
    assert tasks.register_schedules() == []

    @tasks.periodic("@every 1m", name="fine")
    def defaults_only(x: int = 1) -> None: ...

    assert tasks.register_schedules() == ["fine"]
    assert [s.name for s in store.schedules()] == ["fine"]


class WhereRouted(Tasks):
    """Records, for each job routed, whether an event loop was running on the
    thread that routed it: the thread that claimed the job routes it."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.routed: list[tuple[str, str, bool]] = []

    def _route(self, job: alkstore.JobHandle) -> Any:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        self.routed.append((job.payload["task"], threading.current_thread().name, on_loop))
        return super()._route(job)


def test_the_claim_after_an_async_task_is_not_made_on_the_event_loop(store: Store) -> None:
    """A finished sync task's thread claims the next job itself; a finished async
    task's callback runs on the event loop's thread, where a claim would block
    every other async task, so the claiming thread claims instead."""
    tasks = WhereRouted(store)

    @tasks.task(queue="mixed", name="first")
    async def first() -> None:
        await asyncio.sleep(0)

    @tasks.task(queue="mixed", name="second")
    def second() -> None: ...

    @tasks.task(queue="mixed", name="third")
    def third() -> None: ...

    first.enqueue()
    second.enqueue()
    third.enqueue()
    worker = tasks.worker(concurrency=1)  # one slot: the next job waits for the one before
    with running(worker):
        wait_for(lambda: worker.counts.acked == 3)
    assert [name for name, _, _ in tasks.routed] == ["first", "second", "third"]
    on_loop = [(name, thread) for name, thread, loop in tasks.routed if loop]
    assert on_loop == [], f"claimed on the event loop's thread: {on_loop}"
    # The hand-off from a finished sync task to the next job still happens on its thread.
    assert tasks.routed[2][1].startswith("alkstore-handler"), tasks.routed
