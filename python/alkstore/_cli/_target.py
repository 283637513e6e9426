"""Opening the store a command names, without creating one by accident."""

from __future__ import annotations

import os
from typing import Any

import alkstore
from alkstore._core import Queue, Store, _outbox_of, _parse_target

__all__ = ["CliError", "open_existing", "queue_view"]


class CliError(Exception):
    """A problem to report in one line, with the exit status to use."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def sqlite_path(target: str) -> str | None:
    """The file a target names when it selects SQLite (SPEC §2), else None.

    The core's own reading of the target, so the command line accepts and
    refuses exactly what ``alkstore.open`` does, with the same ValueError.
    """
    engine, location = _parse_target(target)
    return location if engine == "sqlite" else None


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
    """The queue ``name``; an outbox's backing queue through its outbox's handle."""
    outbox = _outbox_of(name)
    if outbox is not None:
        # store.queue() refuses the reserved prefix; the outbox's backing
        # queue handle has every read, live_jobs included.
        return store._outbox_queue(outbox)
    return store.queue(name)
