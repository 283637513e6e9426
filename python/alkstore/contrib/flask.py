"""alkstore in a Flask application (SPEC §28).

```python
from flask import Flask
from alkstore.contrib.flask import Alkstore

app = Flask(__name__)
app.config["ALKSTORE_URL"] = "app.db"       # any alkstore.open() target
alk = Alkstore(app, tasks=tasks)              # opens the store, binds the registry

@app.post("/signup")
def signup(): send_welcome.enqueue("ada@example.com"); ...
```

``flask alkstore worker`` runs the registry's jobs until SIGTERM / Ctrl-C, as
``alkstore worker URL --tasks`` does. Config: ``ALKSTORE_URL`` (required),
``ALKSTORE_OPTIONS`` (more ``alkstore.open`` options: schema, pool_size, ...).
The store opens when the extension is initialised (the application's start)
and closes at interpreter exit, or at ``Alkstore.close``. A store belongs
to the process that opened it: in a worker forked from the process that made
the application (gunicorn ``--preload``, uWSGI), the first request, or the
first use of ``Alkstore.store``, opens that worker's own store and binds
the registry to it (``contrib._process``).
"""

from __future__ import annotations

import atexit
from functools import partial
from typing import Any

import click
from flask import Flask, current_app
from flask.cli import with_appcontext

import alkstore
from alkstore._cli._run import _load
from alkstore._cli._target import CliError
from alkstore._core import Store
from alkstore._tasks import Tasks
from alkstore.contrib._process import ProcessStores
from alkstore.contrib._worker import run_registry

__all__ = ["Alkstore"]

EXTENSION = "alkstore"


class _State:
    """The extension's store, opened once in each process that uses it."""

    def __init__(self, url: str, options: dict[str, Any], tasks: Tasks | None) -> None:
        self._open = partial(alkstore.open, url, **options)
        self._stores = ProcessStores()
        self.tasks = tasks

    @property
    def store(self) -> Store:
        """This process's store (opened now in a process forked since the last use)."""
        store, opened = self._stores.get(None, self._open)
        if opened and self.tasks is not None:
            self.tasks.bind(store)
        return store

    def close(self) -> None:
        """Closes this process's store; a parent's, inherited by a fork, is not ours."""
        self._stores.close()


class Alkstore:
    """The extension: ``Alkstore(app, tasks=tasks)``, or ``alk = Alkstore()``
    then ``alk.init_app(app, tasks=tasks)`` in an application factory."""

    def __init__(self, app: Flask | None = None, *, tasks: Tasks | None = None) -> None:
        self._tasks = tasks
        self._app: Flask | None = None
        if app is not None:
            self.init_app(app, tasks=tasks)

    def init_app(self, app: Flask, *, tasks: Tasks | None = None) -> None:
        """Opens the store of ``app.config["ALKSTORE_URL"]`` (with
        ``ALKSTORE_OPTIONS``) now, so a wrong URL fails at startup, binds
        ``tasks`` to it, and adds the ``flask alkstore`` commands. A process
        forked later opens its own store at its first request."""
        url = app.config.get("ALKSTORE_URL")
        if not url:
            raise RuntimeError(
                "set app.config['ALKSTORE_URL'] to the store's path or URL before Alkstore(app)"
            )
        options: dict[str, Any] = dict(app.config.get("ALKSTORE_OPTIONS") or {})
        registry = tasks if tasks is not None else self._tasks
        state = _State(url, options, registry)
        _ = state.store  # opened now, so a wrong URL fails at the start (and binds the registry)
        atexit.register(state.close)
        app.extensions[EXTENSION] = state
        # Each request makes sure its process has its own store before the view
        # runs, so a task's enqueue in a forked worker reaches that worker's.
        app.before_request(partial(_own_store, state))
        app.cli.add_command(_commands)
        self._app = app

    def _state(self) -> _State:
        app = current_app if self._app is None else self._app
        try:
            state = app.extensions[EXTENSION]
        except KeyError:
            raise RuntimeError("Alkstore(app) has not been initialised on this application") from None
        assert isinstance(state, _State)
        return state

    @property
    def store(self) -> Store:
        """The application's store."""
        return self._state().store

    def close(self) -> None:
        """Closes the application's store in this process (at exit otherwise)."""
        self._state().close()


def _own_store(state: _State) -> None:
    """``before_request``: this process's store is open and the registry bound to it."""
    _ = state.store


def _app_state() -> _State:
    state = current_app.extensions.get(EXTENSION)
    if not isinstance(state, _State):
        raise click.UsageError("the application does not use the extension: Alkstore(app)")
    return state


@click.group("alkstore", help="alkstore's commands for this application's store.")
def _commands() -> None:
    pass


@_commands.command("worker", help="Run the task registry's jobs until SIGTERM or Ctrl-C.")
@click.option(
    "--tasks", "spec", default=None, metavar="MODULE:ATTR", help="another registry than Alkstore(tasks=)"
)
@click.option("--queues", default=None, metavar="Q1,Q2", help="only these queues (default: every task's)")
@click.option("--concurrency", default=4, type=click.IntRange(min=1), show_default=True)
@click.option("--no-schedules", is_flag=True, help="do not run the periodic tasks' schedules here")
@click.option("--status-every", default=10.0, type=click.FloatRange(min=0), metavar="S", show_default=True)
@with_appcontext
def _worker(
    spec: str | None, queues: str | None, concurrency: int, no_schedules: bool, status_every: float
) -> None:
    state = _app_state()
    registry = state.tasks
    if spec is not None:
        try:
            found = _load(spec, Tasks, "an alkstore.Tasks registry", "app.jobs:tasks")
        except CliError as exc:
            raise click.UsageError(str(exc)) from None
        assert isinstance(found, Tasks)
        registry = found
    if registry is None:
        raise click.UsageError("no task registry: Alkstore(app, tasks=tasks), or --tasks MODULE:ATTR")
    names = [q for q in queues.split(",") if q] if queues else None
    status = run_registry(
        state.store,
        registry,
        concurrency=concurrency,
        queues=names,
        schedules=not no_schedules,
        status_every_s=status_every,
    )
    raise SystemExit(status)
