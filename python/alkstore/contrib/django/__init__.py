"""alkstore in a Django project (SPEC §28): add ``"alkstore.contrib.django"`` to
``INSTALLED_APPS``.

```python
# app/jobs.py
from alkstore.contrib.django import Tasks

tasks = Tasks()                      # the project's store, opened on first use

@tasks.task(queue="emails")
def send_welcome(user_id: int) -> None: ...

# a view
with transaction.atomic():
    user = User.objects.create(username="ada")
    send_welcome.enqueue(user.id)    # commits with the user, or not at all
```

``manage.py migrate`` creates the store's tables (a migration of this app
opens the store: the engine makes its own tables), ``manage.py
alkstore_worker --tasks app.jobs:tasks`` runs the tasks, and the admin has a
page per queue. Settings: ``alkstore.contrib.django.conf``.
"""

from __future__ import annotations

from typing import Any

from django.db import close_old_connections, connections

import alkstore
from alkstore._dispatch import Route
from alkstore.contrib._process import ProcessStores
from alkstore.contrib.django.conf import target

__all__ = ["Tasks", "close", "store"]

_stores = ProcessStores()


def store() -> alkstore.Store:
    """The process's store, opened on first use where the settings put it (the
    default database's own file or URL unless ``ALKSTORE['URL']`` says
    otherwise). Safe to share between threads, as every Store is. A process
    forked after the store opened (a pre-fork server's worker) opens its own
    on first use; the parent's is left alone."""
    where = target()
    found, _ = _stores.get(
        where, lambda: alkstore.open(where.location, **dict(where.options)), reopen_closed=True
    )
    return found


def close() -> None:
    """Closes the stores this process opened (``store()`` opens again on next use).
    The test runner of ``alkstore.contrib.django.test`` calls it before
    Django drops the test databases, which Postgres refuses while connected."""
    _stores.close()


class Tasks(alkstore.Tasks):
    """An ``alkstore.Tasks`` on the project's ``store``, which it opens on
    first use (not at import, so tests reach the test database). A task's
    ``enqueue()`` runs on Django's connection to the store's database, so
    inside ``transaction.atomic()`` the job commits with the ORM's writes and
    a rollback leaves none; outside one (autocommit) it commits at once. An
    explicit ``tx=`` or ``conn=`` in ``options()`` wins; ``aenqueue`` uses the
    store's own connection. When ``ALKSTORE['URL']`` puts the store on another
    database, enqueues use the store's own connection too (they cannot join
    Django's transaction)."""

    @property
    def store(self) -> alkstore.Store:
        """The store the registry was bound to, or else the project's (``store()``)."""
        bound = self._store
        return bound if bound is not None else _project_store()

    #: Set by ``manage.py alkstore_worker``: each sync task there runs between
    #: ``close_old_connections()`` calls, as a request does, so a worker thread's
    #: ORM connection honours ``CONN_MAX_AGE`` and a broken one is replaced.
    #: Off elsewhere (``alkstore.testing.drain`` in a test keeps the test's connection).
    _manages_connections = False

    def _default_conn(self) -> object | None:
        where = target()
        bound = self._store
        if where.alias is None or (bound is not None and bound is not _stores.peek(where)):
            return None  # the store is not on a Django database (or the registry was bound elsewhere)
        conn: object = connections[where.alias]
        return conn

    def _route(self, job: alkstore.JobHandle) -> Route:
        fn, is_async, timeout = super()._route(job)
        if not self._manages_connections or is_async:
            return fn, is_async, timeout

        def run(payload: Any, handle: alkstore.JobHandle) -> Any:
            close_old_connections()
            try:
                return fn(payload, handle)
            finally:
                close_old_connections()

        return run, is_async, timeout


_project_store = store
