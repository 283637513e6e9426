"""Opening the store a command names, without creating one by accident."""

from __future__ import annotations

import os
from typing import Any, Protocol, cast

import alkstore
from alkstore._core import Job, QueueStats, Store, Swept

__all__ = ["OUTBOX_PREFIX", "CliError", "QueueView", "open_existing", "queue_view"]

#: Backing queues of outboxes (SPEC §7); `store.queue()` refuses the prefix.
OUTBOX_PREFIX = "__alkstore_outbox:"


class CliError(Exception):
    """A problem to report in one line, with the exit status to use."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class QueueView(Protocol):
    """What the commands read from a queue (or an outbox, which reads the same)."""

    def stats(self) -> QueueStats: ...
    def sweep_expired(self) -> Swept: ...
    def dead_jobs(self, limit: int = 100, before_id: int | None = None) -> list[Job]: ...


def sqlite_path(target: str) -> str | None:
    """The file a target names when it selects SQLite (SPEC §2), else None."""
    if target.startswith(("postgresql://", "postgres://")):
        return None
    if target.startswith("sqlite:///"):
        return target[len("sqlite:///") :] or None
    if "://" in target or target in ("", ":memory:"):
        return None  # alkstore.open explains what it accepts
    return target


def open_existing(target: str, schema: str | None = None) -> Store:
    """Opens ``target``; a SQLite file must already exist (a typo must not make a new one)."""
    path = sqlite_path(target)
    if path is not None and not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    if path is not None and os.path.isdir(path):
        raise CliError(f"is a directory, not a SQLite file: {path}")
    options: dict[str, Any] = {} if schema is None else {"schema": schema}
    return alkstore.open(target, **options)


def queue_view(store: Store, name: str) -> QueueView:
    """The queue ``name``, or the outbox behind an ``__alkstore_outbox:<name>`` queue."""
    if name.startswith(OUTBOX_PREFIX):
        # The binding's handle on the backing queue has every queue read
        # (live_jobs included); the Outbox object has all but live_jobs.
        opener = getattr(store, "_outbox_queue", None) or getattr(store, "outbox", None)
        if opener is None:
            raise CliError(f"{name!r} is an outbox queue, and this alkstore build has no store.outbox")
        return cast(QueueView, opener(name[len(OUTBOX_PREFIX) :]))
    return store.queue(name)
