"""``conn=``: running alkstore's enqueue on the application's own connection (ADR 0015).

The core renders one guarded statement in the driver's placeholder style; an
adapter here only runs it on the caller's connection and hands back the ids,
never beginning, committing or rolling back. Drivers are recognised by their
module, so none is imported by ``import alkstore``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

#: What ``conn=`` takes, per engine, as the TypeError lists it.
ACCEPTED = {
    "sqlite": "a sqlite3.Connection or sqlite3.Cursor on the store's file",
    "postgres": "a psycopg (3) Connection or Cursor",
}

Params = Sequence[object] | Mapping[str, object]


class Adapter(Protocol):
    paramstyle: str

    def run(self, sql: str, params: Params) -> list[int]: ...

    def location(self) -> str: ...


class _Sqlite3:
    """Python's own sqlite3, a second SQLite copy on the store's file (ADR 0009)."""

    paramstyle = "qmark"

    def __init__(self, conn: sqlite3.Connection | sqlite3.Cursor) -> None:
        self._conn = conn

    def run(self, sql: str, params: Params) -> list[int]:
        try:
            rows = self._conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as e:
            if "no such table: __alkstore" in str(e):
                return []  # not a store at all: the binding reports the mismatch
            raise
        return [int(r[0]) for r in rows]

    def location(self) -> str:
        conn = self._conn if isinstance(self._conn, sqlite3.Connection) else self._conn.connection
        row = conn.execute("SELECT file FROM pragma_database_list WHERE name = 'main'").fetchone()
        return f"the SQLite file {row[0]!r}" if row and row[0] else "an in-memory SQLite database"


class _Psycopg:
    """psycopg 3: a Connection, or a Cursor whose connection is used."""

    paramstyle = "format"

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def run(self, sql: str, params: Params) -> list[int]:
        from psycopg import errors

        try:
            rows = self._conn.execute(sql, params).fetchall()
        except (errors.UndefinedTable, errors.InvalidSchemaName):
            return []  # the store's schema is not on that database
        return [int(r[0]) for r in rows]

    def location(self) -> str:
        conn = getattr(self._conn, "connection", self._conn)
        info = conn.info
        return f"database {info.dbname!r} on {info.host}:{info.port}"


def adapter(conn: object, engine: str) -> Adapter:
    """The adapter for ``conn`` on a store of ``engine``; a TypeError naming what is accepted."""
    kind = type(conn)
    module = kind.__module__
    if engine == "sqlite" and isinstance(conn, (sqlite3.Connection, sqlite3.Cursor)):
        return _Sqlite3(conn)
    psycopg = module.split(".")[0] == "psycopg"
    if engine == "postgres" and psycopg and kind.__name__ in {"Connection", "Cursor"}:
        return _Psycopg(conn)
    raise TypeError(
        f"conn= takes {ACCEPTED[engine]} for this {engine} store, got {module}.{kind.__qualname__}; "
        "to enqueue in alkstore's own transaction pass tx= instead"
    )
