"""Opening the store a command names, without creating one by accident."""

from __future__ import annotations

import os
from typing import Any

import alkstore
from alkstore._core import Queue, Store

__all__ = ["OUTBOX_PREFIX", "CliError", "open_existing", "queue_view"]

#: Backing queues of outboxes (SPEC §7); `store.queue()` refuses the prefix.
OUTBOX_PREFIX = "__alkstore_outbox:"


class CliError(Exception):
    """A problem to report in one line, with the exit status to use."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


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
    """Opens the store ``target`` names, which must already exist.

    A typo must not make a new store, and inspecting a file or a database must
    not change it: a missing SQLite file is refused here, and the private
    ``_must_exist`` option makes the engine refuse — without writing anything
    (no tables, no schema, no migration, no journal-mode switch) — a file or
    schema that is not already a store of this alkstore's schema version.
    """
    path = sqlite_path(target)
    if path is not None and not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    if path is not None and os.path.isdir(path):
        raise CliError(f"is a directory, not a SQLite file: {path}")
    options: dict[str, Any] = {"_must_exist": True}
    if schema is not None:
        options["schema"] = schema
    return alkstore.open(target, **options)


def queue_view(store: Store, name: str) -> Queue:
    """The queue ``name``; an ``__alkstore_outbox:<name>`` queue through its outbox's handle."""
    if name.startswith(OUTBOX_PREFIX):
        # store.queue() refuses the reserved prefix; the outbox's backing
        # queue handle has every read, live_jobs included.
        return store._outbox_queue(name.removeprefix(OUTBOX_PREFIX))
    return store.queue(name)
