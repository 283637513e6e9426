"""``alkstore worker module:attr``: import a Worker and run it until SIGTERM / SIGINT."""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from types import ModuleType

from alkstore._cli._target import CliError
from alkstore._worker import Worker

__all__ = ["load_worker", "run_worker"]

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


def load_worker(spec: str) -> Worker:
    """The ``Worker`` that ``module:attr`` (``attr`` may be dotted) names."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"expected MODULE:ATTRIBUTE naming a Worker, e.g. {EXAMPLE}; got {spec!r}", status=2)
    obj: object = _import(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"module {module_name!r} has no attribute {attr!r}") from None
    if not isinstance(obj, Worker):
        raise CliError(f"{spec} is a {type(obj).__name__}, not an alkstore.Worker")
    return obj


def _status(worker: Worker, every_s: float, done: threading.Event) -> threading.Thread:
    def loop() -> None:
        while not done.wait(every_s):
            print(f"alkstore worker {worker.worker_id}: {worker.counts.line()}", file=sys.stderr, flush=True)

    t = threading.Thread(target=loop, name="alkstore-cli-status", daemon=True)
    t.start()
    return t


def run_worker(spec: str, concurrency: int | None, status_every_s: float) -> int:
    """Runs the worker until a signal stops it; returns the exit status."""
    worker = load_worker(spec)
    if concurrency is not None:
        worker.concurrency = concurrency
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
