"""``alkstore worker module:attr``: import a Worker and run it until SIGTERM /
SIGINT; ``alkstore worker URL --tasks module:attr``: the same for every task of
a registry (SPEC §22), on the store at URL, with its periodic tasks' schedules."""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from types import ModuleType

import alkstore
from alkstore._cli._target import CliError, sqlite_path
from alkstore._core import StopToken
from alkstore._tasks import Tasks
from alkstore._worker import Worker

__all__ = ["load_worker", "run_tasks", "run_worker"]

EXAMPLE = "myapp.tasks:worker"


def _import(module_name: str) -> ModuleType:
    # Like `python -m`, find modules in the current directory even when run
    # through the console script (whose sys.path starts with its own bin dir).
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise CliError(f"cannot import module {module_name!r}: no module named {exc.name!r}") from None
        raise CliError(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # the user's module raised while it loaded
        raise CliError(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None


def _load(spec: str, kind: type, what: str, example: str) -> object:
    """The object ``module:attr`` (``attr`` may be dotted) names, of ``kind``."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"expected MODULE:ATTRIBUTE naming {what}, e.g. {example}; got {spec!r}", status=2)
    obj: object = _import(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"module {module_name!r} has no attribute {attr!r}") from None
    if not isinstance(obj, kind):
        raise CliError(f"{spec} is a {type(obj).__name__}, not {what}")
    return obj


def load_worker(spec: str) -> Worker:
    """The ``Worker`` that ``module:attr`` names."""
    worker = _load(spec, Worker, "an alkstore.Worker", EXAMPLE)
    assert isinstance(worker, Worker)
    return worker


def _status(worker: Worker, every_s: float, done: threading.Event) -> threading.Thread:
    def loop() -> None:
        while not done.wait(every_s):
            print(f"alkstore worker {worker.worker_id}: {worker.counts.line()}", file=sys.stderr, flush=True)

    t = threading.Thread(target=loop, name="alkstore-cli-status", daemon=True)
    t.start()
    return t


def run_tasks(
    url: str,
    schema: str | None,
    spec: str,
    concurrency: int | None,
    status_every_s: float,
    *,
    queues: list[str] | None = None,
    schedules: bool = True,
) -> int:
    """Runs every task of the registry ``spec`` names on the store at ``url``
    (and, unless told not to, its periodic tasks' schedules) until a signal
    stops it; returns the exit status."""
    registry = _load(spec, Tasks, "an alkstore.Tasks registry", "myapp.jobs:tasks")
    assert isinstance(registry, Tasks)
    path = sqlite_path(url)
    if path is not None and not os.path.exists(path):
        raise CliError(f"no such file: {path} (a worker does not create the store: the application does)")
    store = alkstore.open(url) if schema is None else alkstore.open(url, schema=schema)
    try:
        registry.bind(store)
        worker = registry.worker(concurrency or 4, queues)
        runner = _schedules(store) if schedules and registry.register_schedules() else None
        try:
            return _run(worker, status_every_s)
        finally:
            if runner is not None:
                runner[0].stop()
                runner[1].join()
    finally:
        store.close()


def _schedules(store: alkstore.Store) -> tuple[StopToken, threading.Thread]:
    """The schedule runner on a thread (a hot standby while another process leads)."""
    stop = StopToken()

    def run() -> None:
        log = logging.getLogger("alkstore.worker")
        while not stop.stopped:
            try:
                store.run_schedules(stop)
            except alkstore.LeadershipLost:
                log.warning("the schedule runner lost its leadership; waiting to lead again")
            except alkstore.StoreClosed:
                return
            except alkstore.AlkstoreError as exc:  # the database went away: try again shortly
                log.error("the schedule runner failed (%s); starting again in 5 s", exc)
                stop.wait(5)

    t = threading.Thread(target=run, name="alkstore-schedules", daemon=True)
    t.start()
    return stop, t


def run_worker(spec: str, concurrency: int | None, status_every_s: float) -> int:
    """Runs the worker until a signal stops it; returns the exit status."""
    worker = load_worker(spec)
    if concurrency is not None:
        worker.concurrency = concurrency
    return _run(worker, status_every_s)


def _run(worker: Worker, status_every_s: float) -> int:
    if not logging.getLogger().handlers:
        # Handler errors and releases are logged by `alkstore.worker`; show them.
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    queues = ", ".join(worker.queues) or "(none)"
    print(
        f"alkstore worker {worker.worker_id}: queues {queues}; concurrency {worker.concurrency}; "
        f"SIGTERM or Ctrl-C stops it (in-flight jobs get {worker.grace_s:g} s)",
        file=sys.stderr,
        flush=True,
    )
    done = threading.Event()
    status = _status(worker, status_every_s, done) if status_every_s > 0 else None
    try:
        worker.run()
    finally:
        done.set()
        if status is not None:
            status.join()
    print(f"alkstore worker {worker.worker_id} stopped: {worker.counts.line()}", file=sys.stderr, flush=True)
    return 0
