"""One store per process, for the framework integrations (ADR 0031, revision).

A store belongs to the process that opened it. A pre-fork server (gunicorn
``--preload``, uWSGI without ``lazy-apps``, ``multiprocessing`` with fork)
loads the application in a parent and forks the workers, which inherit the
parent's open stores: there a Postgres store refuses every call ("opened in
the parent process before fork()"), and a SQLite one must not be used either
(its connections, file locks and threads are the parent's; SQLite forbids
carrying a connection across ``fork()``).

:class:`ProcessStores` hands out the stores of the calling process: the first
use in a forked child opens that child's own. The parent's copies are left
alone in the child — never used, never closed — so nothing the child does
touches the parent's connections. The check is a pid comparison at each use
rather than an ``os.register_at_fork`` hook, so it also holds for processes
forked outside Python's ``os.fork`` (uWSGI forks in C).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable

from alkstore._core import Store

__all__ = ["ProcessStores"]

# One lock for every holder: held only while a store opens. A fork while
# another thread held it would leave the child's copy locked for good, so the
# child gets a fresh one (only os.fork runs this; a C fork happens in a
# server's parent, which opens nothing on other threads).
_lock = threading.Lock()


def _fresh_lock() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_fresh_lock)

#: The stores a forked child inherited from its parent, kept referenced so the
#: child never closes or drops them: they are the parent's.
_inherited: list[Store] = []


class ProcessStores:
    """This process's stores, by key, each opened on first use in the process."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._stores: dict[Hashable, Store] = {}

    def get(
        self, key: Hashable, open_store: Callable[[], Store], *, reopen_closed: bool = False
    ) -> tuple[Store, bool]:
        """The store of ``key`` in this process, and whether it was opened just
        now: by ``open_store()`` when this process has none yet (or, with
        ``reopen_closed``, when its own was closed)."""
        with _lock:
            self._adopt_process()
            found = self._stores.get(key)
            if found is not None and not (reopen_closed and found.closed):
                return found, False
            found = self._stores[key] = open_store()
            return found, True

    def peek(self, key: Hashable) -> Store | None:
        """The store of ``key`` this process has opened, if any (opens nothing)."""
        with _lock:
            self._adopt_process()
            return self._stores.get(key)

    def close(self) -> None:
        """Closes the stores this process opened (a parent's are left alone).
        They stay this process's: :meth:`get` hands them out closed, unless
        asked to reopen them."""
        with _lock:
            self._adopt_process()
            mine = list(self._stores.values())
        for store in mine:
            store.close()

    def _adopt_process(self) -> None:
        """In a process forked since the last use: set the parent's stores aside."""
        pid = os.getpid()
        if pid != self._pid:
            _inherited.extend(self._stores.values())
            self._stores = {}
            self._pid = pid
