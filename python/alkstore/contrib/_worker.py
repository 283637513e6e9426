"""Running a task registry until a signal stops it, for the framework commands
(``manage.py alkstore_worker``, ``flask alkstore worker``): the same run as
``alkstore worker URL --tasks`` (SPEC §22), on a store the framework opened."""

from __future__ import annotations

from alkstore._cli._run import _run, _schedules
from alkstore._core import Store
from alkstore._tasks import Tasks

__all__ = ["run_registry"]


def run_registry(
    store: Store,
    registry: Tasks,
    *,
    concurrency: int = 4,
    queues: list[str] | None = None,
    schedules: bool = True,
    status_every_s: float = 10.0,
) -> int:
    """Runs every task of ``registry`` (of ``queues``, default all) on ``store``,
    with its periodic tasks' schedules unless ``schedules`` is False, until
    SIGTERM / SIGINT; the exit status. The Worker's own signal handling and
    grace apply: in-flight jobs finish or are released."""
    registry.bind(store)
    worker = registry.worker(concurrency, queues)
    runner = _schedules(store) if schedules and registry.register_schedules() else None
    try:
        return _run(worker, status_every_s)
    finally:
        if runner is not None:
            runner[0].stop()
            runner[1].join()
