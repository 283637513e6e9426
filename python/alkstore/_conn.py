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
    "sqlite": (
        "a sqlite3.Connection or sqlite3.Cursor on the store's file, a SQLAlchemy Connection or Session, "
        "or a Django connection"
    ),
    "postgres": (
        "a psycopg (3) Connection or Cursor, a SQLAlchemy Connection or Session, or a Django connection"
    ),
}

#: Django's database vendor for each engine.
VENDORS = {"sqlite": "sqlite", "postgres": "postgresql"}

#: SQLAlchemy's dialect name for each engine.
DIALECTS = {"sqlite": "sqlite", "postgres": "postgresql"}


def _missing_store(e: BaseException) -> bool:
    """Whether a driver error says the store's tables are not on that database at all."""
    if isinstance(e, sqlite3.OperationalError):
        return "no such table: __alkstore" in str(e)
    psycopg = type(e).__module__.startswith("psycopg")
    return psycopg and type(e).__name__ in {"UndefinedTable", "InvalidSchemaName"}


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
            if _missing_store(e):
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
        from psycopg import Error

        try:
            rows = self._conn.execute(sql, params).fetchall()
        except Error as e:
            if _missing_store(e):
                return []  # the store's schema is not on that database
            raise
        return [int(r[0]) for r in rows]

    def location(self) -> str:
        conn = getattr(self._conn, "connection", self._conn)
        info = conn.info
        return f"database {info.dbname!r} on {info.host}:{info.port}"


class _SqlAlchemy:
    """A SQLAlchemy Connection, or a Session's connection (its current transaction)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.paramstyle: str = conn.dialect.paramstyle

    def run(self, sql: str, params: Params) -> list[int]:
        from sqlalchemy import exc

        args = params if isinstance(params, Mapping) else tuple(params)
        try:
            rows = self._conn.exec_driver_sql(sql, args).fetchall()
        except exc.DBAPIError as e:
            if e.orig is not None and _missing_store(e.orig):
                return []
            raise
        return [int(r[0]) for r in rows]

    def location(self) -> str:
        return f"the database at {self._conn.engine.url.render_as_string(hide_password=True)}"


def _sqlalchemy(conn: object, engine: str) -> _SqlAlchemy | None:
    """The adapter when ``conn`` is a SQLAlchemy Connection or Session of this engine's dialect."""
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

    if isinstance(conn, Session):
        conn = conn.connection()
    if isinstance(conn, Connection) and conn.dialect.name == DIALECTS[engine]:
        return _SqlAlchemy(conn)
    return None


class _Django:
    """Django's ``connection`` or ``connections[alias]``: its cursor, in whatever
    transaction it has (``transaction.atomic()``), or autocommit."""

    # Django's cursor takes %s and converts it for its backend.
    paramstyle = "format"

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def run(self, sql: str, params: Params) -> list[int]:
        from django.db import DatabaseError

        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, params)
                rows = cur.fetchall()
        except DatabaseError as e:
            if e.__cause__ is not None and _missing_store(e.__cause__):
                return []
            raise
        return [int(r[0]) for r in rows]

    def location(self) -> str:
        return f"the Django database {self._conn.alias!r} ({self._conn.settings_dict.get('NAME')!r})"


def adapter(conn: object, engine: str) -> Adapter:
    """The adapter for ``conn`` on a store of ``engine``; a TypeError naming what is accepted."""
    kind = type(conn)
    module = kind.__module__
    package = module.split(".")[0]
    if engine == "sqlite" and isinstance(conn, (sqlite3.Connection, sqlite3.Cursor)):
        return _Sqlite3(conn)
    if engine == "postgres" and package == "psycopg" and kind.__name__ in {"Connection", "Cursor"}:
        return _Psycopg(conn)
    if package == "sqlalchemy" and (found := _sqlalchemy(conn, engine)) is not None:
        return found
    # `django.db.connection` is a proxy (django.utils.connection); `connections[alias]`
    # a backend's DatabaseWrapper. Both answer `vendor`.
    if package == "django" and getattr(conn, "vendor", None) == VENDORS[engine]:
        return _Django(conn)
    raise TypeError(
        f"conn= takes {ACCEPTED[engine]} for this {engine} store, got {module}.{kind.__qualname__}; "
        "to enqueue in alkstore's own transaction pass tx= instead"
    )
