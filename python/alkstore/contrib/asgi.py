"""alkstore in an ASGI application: FastAPI, Starlette (SPEC §28).

```python
from fastapi import Depends, FastAPI
from alkstore.contrib.asgi import Alkstore

alk = Alkstore("app.db", tasks=tasks)         # any alkstore.open() target and options
app = FastAPI(lifespan=alk.lifespan)           # opens the store at startup, closes it at shutdown
app.mount("/jobs", alk.dashboard())            # the dashboard (extra alkstore[dashboard])

@app.post("/signup")
def signup(store: alkstore.Store = Depends(alk.dependency)) -> dict[str, int]: ...
```

``worker=True`` (off by default) also runs the registry's jobs in this
process, on a thread, and ``schedules=True`` its schedules; shutdown stops
them the way SIGTERM stops ``alkstore worker`` (no more claims, in-flight jobs
get the Worker's grace, then are released) before the store closes. Nothing
here imports a framework: the lifespan and the dependency are plain ASGI and
Python; only ``Alkstore.dashboard`` needs Starlette.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, MutableMapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import alkstore
from alkstore._cli._run import _schedules
from alkstore._core import StopToken, Store
from alkstore._tasks import Tasks
from alkstore._worker import Worker

__all__ = ["Alkstore"]

#: The key of the store in the lifespan state (``request.state.alkstore`` in Starlette).
STATE_KEY = "alkstore"

# ASGI's own types, spelled out so that nothing here imports a framework.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Alkstore:
    """One store for one ASGI application, opened by ``lifespan``.

    ``target`` and ``options`` are what ``alkstore.open`` takes. ``tasks``, a
    registry, is bound to the store at startup. ``worker``: False (default),
    True (run ``tasks``' jobs, ``concurrency`` at once, of ``queues`` or every
    task's), or a function making a ``alkstore.Worker`` from the store.
    ``schedules``: run the store's schedules (``store.run_schedules``) here
    too; False by default, as some other process usually runs them."""

    def __init__(
        self,
        target: str | os.PathLike[str],
        *,
        tasks: Tasks | None = None,
        worker: bool | Callable[[Store], Worker] = False,
        schedules: bool = False,
        concurrency: int = 4,
        queues: list[str] | None = None,
        **options: Any,
    ) -> None:
        if worker is True and tasks is None:
            raise TypeError("worker=True runs a task registry's jobs: pass tasks=, or worker=<function>")
        self._target = target
        self._options = options
        self._tasks = tasks
        self._worker_of = worker
        self._schedules = schedules
        self._concurrency = concurrency
        self._queues = queues
        self._store: Store | None = None
        self.worker: Worker | None = None

    @property
    def store(self) -> Store:
        """The open store; a RuntimeError outside the application's lifespan."""
        if self._store is None:
            raise RuntimeError("the store is not open: pass lifespan=alk.lifespan to the application")
        return self._store

    def dependency(self) -> Iterator[Store]:
        """A FastAPI dependency: ``store: Store = Depends(alk.dependency)``."""
        yield self.store

    def lifespan(self, app: object = None) -> AbstractAsyncContextManager[dict[str, Any]]:
        """The application's lifespan: ``FastAPI(lifespan=alk.lifespan)`` or
        ``Starlette(lifespan=alk.lifespan)``. Its state holds the store under
        ``"alkstore"``."""
        return self._lifespan()

    @asynccontextmanager
    async def _lifespan(self) -> AsyncIterator[dict[str, Any]]:
        store = await asyncio.to_thread(lambda: alkstore.open(self._target, **self._options))
        self._store = store
        if self._tasks is not None:
            self._tasks.bind(store)
        running: list[tuple[StopToken, threading.Thread]] = []
        try:
            if self._schedules:
                running.append(_schedules(store))
            worker = self._make_worker(store)
            if worker is not None:
                running.append(_run_worker(worker))
            yield {STATE_KEY: store}
        finally:
            for stop, thread in reversed(running):
                stop.stop()
                await asyncio.to_thread(thread.join)
            self._store = None
            self.worker = None
            await asyncio.to_thread(store.close)

    def _make_worker(self, store: Store) -> Worker | None:
        make = self._worker_of
        if make is False:
            return None
        if make is True:
            assert self._tasks is not None
            self.worker = self._tasks.worker(self._concurrency, self._queues, store=store)
        else:
            self.worker = make(store)
        return self.worker

    def dashboard(
        self,
        *,
        read_only: bool = False,
        auth: str | None = None,
        allowed_hosts: Iterable[str] | None = None,
    ) -> ASGIApp:
        """The dashboard (SPEC §19, extra ``alkstore[dashboard]``) of this store,
        to mount: ``app.mount("/jobs", alk.dashboard())``. It is built at its
        first request, when the lifespan has opened the store; its pages link
        under the mount's prefix. ``allowed_hosts``: the names the application
        is reached by, beyond the local ones (ADR 0025)."""
        from alkstore.dashboard import create_app

        hosts = list(allowed_hosts or ())
        built: dict[int, ASGIApp] = {}

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "lifespan":  # a mounted app gets none; served alone it has nothing to do
                return
            store = self.store
            inner = built.get(id(store))
            if inner is None:
                built.clear()
                inner = built[id(store)] = create_app(
                    store, read_only=read_only, auth=auth, allowed_hosts=hosts
                )
            await inner(scope, receive, send)

        return app


def _run_worker(worker: Worker) -> tuple[StopToken, threading.Thread]:
    """``worker.run`` on a thread, stopped through its token (signals are the server's)."""
    stop = StopToken()
    thread = threading.Thread(target=worker.run, args=(stop,), name="alkstore-asgi-worker", daemon=True)
    thread.start()
    return stop, thread
