"""``alkstore.Tasks``: functions as the unit of work, on top of queues (SPEC §22).

```python
tasks = alkstore.Tasks(store)

@tasks.task(queue="emails", max_attempts=5, timeout=30.0)
def send_email(to: str, subject: str = "hi") -> str: ...

send_email.enqueue("ada@example.com", subject="welcome")   # a job
send_email("ada@example.com")                              # runs it here, now
tasks.worker(concurrency=8).run()                          # runs the jobs
```

A task's job is an ordinary job whose payload is ``{"task": NAME, "args":
[...], "kwargs": {...}}`` (ADR 0026); NAME routes it, so many tasks share a
queue. Arguments are bound against the function's signature and checked as
JSON when the job is enqueued, never when it runs. A Worker made by
``Tasks.worker`` runs each job through the task its payload names; what
the task returns or raises is settled as for any handler (``alkstore._runner``);
what it returns is its job's result (SPEC §25).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, TypeVar, overload

from alkstore._core import (
    JobHandle,
    Queue,
    Store,
    Transaction,
    _check_json,
    _check_queue_options,
    _timeout,
    _validate_name,
    next_fires,
)
from alkstore._dispatch import Handler, Route
from alkstore._errors import Retry
from alkstore._worker import _is_async

if TYPE_CHECKING:
    from alkstore._worker import Worker

__all__ = ["DEFAULT_QUEUE", "Task", "TaskCall", "Tasks"]

P = ParamSpec("P")
R = TypeVar("R")

#: The queue of a task that names none.
DEFAULT_QUEUE = "default"

_Duration = float | timedelta


def _unknown(name: object) -> Callable[[Any, JobHandle], Any]:
    """What runs a job whose task no registry here knows: retried, never
    dropped (a rolling deploy may bring the worker that knows it)."""
    text = (
        f"unknown task '{name}'"
        if isinstance(name, str)
        else f"not a task's payload (no task name: {name!r})"
    )

    def refuse(_payload: Any, _job: JobHandle) -> Any:
        raise Retry(error=text)

    return refuse


def _unrouted(_payload: Any, _job: JobHandle) -> Any:  # pragma: no cover - routed handlers never call it
    raise RuntimeError("a task queue's handler runs through its route")


@dataclass(frozen=True)
class _Stamps:
    """The queue options a task stamps on its jobs (``store.queue``'s)."""

    visibility_timeout_s: float | None = None
    max_attempts: int | None = None
    backoff_base_s: float | None = None
    dead_letter_retention_s: float | None = None


class Task(Generic[P, R]):
    """A function registered with ``Tasks``. Calling it runs it here;
    ``enqueue`` makes a job that a worker runs."""

    def __init__(
        self,
        registry: Tasks,
        fn: Callable[P, R],
        name: str,
        queue: str,
        timeout: float | None,
        stamps: _Stamps,
    ) -> None:
        self._registry = registry
        self._fn = fn
        self._signature = inspect.signature(fn)
        self._is_async = _is_async(fn)
        self._stamps = stamps
        self._queue_of: tuple[Store, Queue] | None = None
        self.name = name
        self.queue = queue
        self.timeout = timeout
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __repr__(self) -> str:
        return f"<alkstore.Task {self.name!r} queue={self.queue!r}>"

    @property
    def fn(self) -> Callable[P, R]:
        """The function itself."""
        return self._fn

    @property
    def max_attempts(self) -> int | None:
        """The attempts stamped on this task's jobs (None: the queue's default)."""
        return self._stamps.max_attempts

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Runs the function here and now, as a plain call (no job)."""
        return self._fn(*args, **kwargs)

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """A job that runs ``fn(*args, **kwargs)`` on a worker; its id. The
        arguments are bound and checked first: nothing is written on a bad call."""
        return self.options().enqueue(*args, **kwargs)

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """``enqueue`` for asyncio: the database call leaves the loop free."""
        return await self.options().aenqueue(*args, **kwargs)

    def options(
        self,
        *,
        delay: _Duration | None = None,
        run_at: datetime | float | None = None,
        priority: int | None = None,
        unique_key: str | None = None,
        expires: _Duration | None = None,
        group: str | None = None,
        after: Iterable[int] | None = None,
        on_failure: Literal["cancel", "run"] | None = None,
        keep_result: _Duration | None = None,
        tx: Transaction | None = None,
        conn: object | None = None,
    ) -> TaskCall[P, R]:
        """This task with enqueue options (``Queue.enqueue``'s), e.g.
        ``send_email.options(delay=60, tx=tx).enqueue("ada@example.com")``.
        ``after=[ids]`` makes the job wait for those jobs (SPEC §25), with
        ``on_failure`` and ``keep_result`` as ``Queue.enqueue`` takes them."""
        parents = None if after is None else tuple(after)
        return TaskCall(
            self,
            delay,
            run_at,
            priority,
            unique_key,
            expires,
            group,
            parents,
            on_failure,
            keep_result,
            tx,
            conn,
        )

    # -- for TaskCall and the worker -------------------------------------------

    def _queue(self) -> Queue:
        store = self._registry.store
        cached = self._queue_of
        if cached is None or cached[0] is not store:
            s = self._stamps
            q = store.queue(
                self.queue,
                visibility_timeout_s=s.visibility_timeout_s,
                max_attempts=s.max_attempts,
                backoff_base_s=s.backoff_base_s,
                dead_letter_retention_s=s.dead_letter_retention_s,
            )
            cached = self._queue_of = (store, q)
        return cached[1]

    def _payload(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"task {self.name!r}: {exc}") from None
        listed = list(args)
        _check_json(listed, "args")
        _check_json(kwargs, "kwargs")
        return {"task": self.name, "args": listed, "kwargs": kwargs}

    def _route(self) -> Route:
        fn = self._fn
        if self._is_async:

            async def run_async(payload: Any, _job: JobHandle) -> Any:
                return await fn(*payload.get("args", ()), **payload.get("kwargs", {}))  # type: ignore[misc]

            return run_async, True, self.timeout

        def run(payload: Any, _job: JobHandle) -> Any:
            return fn(*payload.get("args", ()), **payload.get("kwargs", {}))

        return run, False, self.timeout


@dataclass(frozen=True)
class TaskCall(Generic[P, R]):
    """A task with enqueue options, from ``Task.options``."""

    task: Task[P, R]
    delay: _Duration | None = None
    run_at: datetime | float | None = None
    priority: int | None = None
    unique_key: str | None = None
    expires: _Duration | None = None
    group: str | None = None
    after: tuple[int, ...] | None = None
    on_failure: Literal["cancel", "run"] | None = None
    keep_result: _Duration | None = None
    tx: Transaction | None = None
    conn: object | None = field(default=None, repr=False)

    def _workflow(self) -> dict[str, Any]:
        """The workflow options that were given (SPEC §25): the queue's own
        defaults stand for the others."""
        given: dict[str, Any] = {}
        if self.after is not None:
            given["after"] = list(self.after)
        if self.on_failure is not None:
            given["on_failure"] = self.on_failure
        if self.keep_result is not None:
            given["keep_result"] = self.keep_result
        return given

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """``Task.enqueue`` with these options."""
        payload = self.task._payload(args, kwargs)
        conn = self.conn
        if conn is None and self.tx is None:
            conn = self.task._registry._default_conn()
        return self.task._queue().enqueue(
            payload,
            delay=self.delay,
            run_at=self.run_at,
            priority=self.priority,
            expires=self.expires,
            unique_key=self.unique_key,
            group=self.group,
            tx=self.tx,
            conn=conn,
            **self._workflow(),
        )

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """``Task.aenqueue`` with these options (``tx=`` is for the sync form)."""
        if self.tx is not None:
            raise TypeError(
                "aenqueue takes conn= (an async connection), not tx=: use enqueue inside a transaction"
            )
        payload = self.task._payload(args, kwargs)
        pending: Awaitable[int] = self.task._queue().aenqueue(
            payload,
            delay=self.delay,
            run_at=self.run_at,
            priority=self.priority,
            expires=self.expires,
            unique_key=self.unique_key,
            group=self.group,
            conn=self.conn,
            **self._workflow(),
        )
        return await pending


def _default_name(f: Callable[..., Any]) -> str:
    """``module.qualname`` of a function, method or class. A ``functools.partial``
    or a callable object has no name of its own (two partials of one function,
    or two instances of one class, would share their function's or class's),
    so such a task is given ``name=``."""
    qualname = getattr(f, "__qualname__", None)
    module = getattr(f, "__module__", None)
    if not isinstance(qualname, str) or not isinstance(module, str):
        kind = type(f)
        raise TypeError(
            f"a {kind.__module__}.{kind.__qualname__} object has no __qualname__ to name its task by: "
            'pass name="..." to tasks.task (a name that stays the same across deploys)'
        )
    return f"{module}.{qualname}"


@dataclass(frozen=True)
class _Periodic:
    """A task fired by a schedule, registered with the store by ``Tasks.worker``."""

    name: str
    spec: str
    tz: str
    task: Task[[], Any]


class Tasks:
    """A registry of tasks bound to one store (or bound later with ``bind``,
    e.g. by ``alkstore worker URL --tasks module:tasks``)."""

    def __init__(self, store: Store | None = None) -> None:
        if store is not None and not isinstance(store, Store):
            raise TypeError(f"store must be an alkstore.Store or None, got {type(store).__name__}")
        self._store = store
        self._tasks: dict[str, Task[Any, Any]] = {}
        self._periodic: dict[str, _Periodic] = {}

    def __repr__(self) -> str:
        return f"<alkstore.Tasks {len(self._tasks)} task(s)>"

    @property
    def store(self) -> Store:
        """The store jobs are enqueued into."""
        if self._store is None:
            raise RuntimeError("this task registry has no store yet: Tasks(store), or tasks.bind(store)")
        return self._store

    def bind(self, store: Store) -> None:
        """Binds the registry (every task) to ``store``."""
        if not isinstance(store, Store):
            raise TypeError(f"store must be an alkstore.Store, got {type(store).__name__}")
        self._store = store

    def _default_conn(self) -> object | None:
        """The ``conn=`` of a sync enqueue that names neither ``tx=`` nor
        ``conn=``: None here (the store's own connection); a framework's
        registry (``alkstore.contrib.django.Tasks``) answers its connection."""
        return None

    def __contains__(self, name: object) -> bool:
        return name in self._tasks

    def __getitem__(self, name: str) -> Task[Any, Any]:
        try:
            return self._tasks[name]
        except KeyError:
            raise KeyError(f"no task named {name!r}") from None

    def __iter__(self) -> Iterator[Task[Any, Any]]:
        return iter(list(self._tasks.values()))

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def queues(self) -> list[str]:
        """The queues the tasks use, sorted."""
        return sorted({t.queue for t in self._tasks.values()})

    @overload
    def task(self, fn: Callable[P, R], /) -> Task[P, R]: ...

    @overload
    def task(
        self,
        fn: None = None,
        /,
        *,
        queue: str = DEFAULT_QUEUE,
        name: str | None = None,
        max_attempts: int | None = None,
        timeout: _Duration | None = None,
        visibility_timeout_s: float | None = None,
        backoff_base_s: float | None = None,
        dead_letter_retention_s: float | None = None,
    ) -> Callable[[Callable[P, R]], Task[P, R]]: ...

    def task(
        self,
        fn: Any = None,
        /,
        *,
        queue: str = DEFAULT_QUEUE,
        name: str | None = None,
        max_attempts: int | None = None,
        timeout: _Duration | None = None,
        visibility_timeout_s: float | None = None,
        backoff_base_s: float | None = None,
        dead_letter_retention_s: float | None = None,
    ) -> Any:
        """Registers a function (plain or ``async def``) as a task: ``@tasks.task``
        or ``@tasks.task(queue=..., ...)``. ``name`` (default ``module.qualname``)
        is what a job carries, so keep it stable across deploys. The queue
        options are stamped on its jobs, as ``store.queue`` stamps them.
        ``timeout`` (seconds): an ``async def`` task is cancelled past it; a sync
        one's thread cannot be stopped, so its outcome is discarded; either
        way the job is retried with ``last_error`` naming the timeout."""
        _validate_name("queue", queue)
        limit = None if timeout is None else _timeout("timeout", timeout)
        stamps = _Stamps(visibility_timeout_s, max_attempts, backoff_base_s, dead_letter_retention_s)
        # Checked now, as store.queue checks them, not at the first enqueue.
        _check_queue_options(visibility_timeout_s, max_attempts, backoff_base_s, dead_letter_retention_s)

        def register(f: Callable[..., Any]) -> Task[Any, Any]:
            if not callable(f):
                raise TypeError(f"a task must be a function, got {type(f).__name__}")
            task_name = name if name is not None else _default_name(f)
            if not isinstance(task_name, str) or not task_name:
                raise TypeError(f"name must be a non-empty str, got {task_name!r}")
            if task_name in self._tasks:
                raise ValueError(f"a task named {task_name!r} is already registered")
            t: Task[Any, Any] = Task(self, f, task_name, queue, limit, stamps)
            self._tasks[task_name] = t
            return t

        return register if fn is None else register(fn)

    def periodic(
        self,
        spec: str,
        *,
        tz: str = "UTC",
        name: str | None = None,
        queue: str = DEFAULT_QUEUE,
        max_attempts: int | None = None,
        timeout: _Duration | None = None,
    ) -> Callable[[Callable[[], R]], Task[[], R]]:
        """Registers a task that takes no arguments and a schedule that fires
        it by ``spec`` (SPEC §8, §23) in time zone ``tz``. The schedule, named
        ``name`` (default: the task's name), is written to the store by
        ``worker`` or ``register_schedules``; some process must run the
        schedules (``store.run_schedules``, or ``alkstore worker --tasks``).

        Everything the schedule will need is checked here, as ``store.schedule``
        would check it: the spec (``InvalidSpec``, also for one that can never
        fire), the zone (``ValueError``), the schedule's name (``InvalidName``),
        and that the function can be called with no arguments (``TypeError``).
        A refused decoration registers nothing."""
        # The spec and zone are core's to judge: next_fires reads them through
        # the timetable that store.schedule builds (an impossible spec included).
        next_fires(spec, tz=tz, n=1)
        make = self.task(queue=queue, name=name, max_attempts=max_attempts, timeout=timeout)

        def register(f: Callable[[], R]) -> Task[[], R]:
            task_name = name if name is not None else _default_name(f)
            _validate_name("schedule", task_name)
            try:
                inspect.signature(f).bind()
            except TypeError as exc:
                raise TypeError(
                    f"periodic task {task_name!r}: a schedule calls it with no arguments, but {exc}"
                ) from None
            t = make(f)
            self._periodic[t.name] = _Periodic(t.name, spec, tz, t)
            return t

        return register

    def register_schedules(self, store: Store | None = None) -> list[str]:
        """Writes the periodic tasks' schedules to the store (an upsert by
        name: a restart keeps each schedule's next fire); their names."""
        target = store or self.store
        for p in self._periodic.values():
            payload = {"task": p.task.name, "args": [], "kwargs": {}}
            target.schedule(p.name, p.spec, p.task.queue, payload=payload, tz=p.tz)
        return list(self._periodic)

    def worker(
        self,
        concurrency: int = 4,
        queues: list[str] | None = None,
        *,
        worker_id: str | None = None,
        grace_s: float = 30.0,
        telemetry: bool = False,
        store: Store | None = None,
    ) -> Worker:
        """A ``alkstore.Worker`` that runs every task's jobs (of
        ``queues``, default every queue a task uses), each job through the task
        its payload names; a name no task here has is retried with
        ``last_error`` "unknown task 'NAME'". Registers the periodic tasks'
        schedules too."""
        from alkstore._worker import Worker

        target = store or self.store
        names = self.queues if queues is None else list(queues)
        if not names:
            raise ValueError("no queues to work on: register a task first, or pass queues=[...]")
        w = Worker(target, concurrency, worker_id, grace_s=grace_s, telemetry=telemetry)
        for q in names:
            w._add(Handler(target.queue(q), _unrouted, False, None, self._route))
        self.register_schedules(target)
        return w

    def _route(self, job: JobHandle) -> Route:
        """What runs ``job``: the task its payload names."""
        payload = job.payload
        name = payload.get("task") if isinstance(payload, dict) else None
        task = self._tasks.get(name) if isinstance(name, str) else None
        if task is None:
            return _unknown(name), False, None
        return task._route()
