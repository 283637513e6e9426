"""``conn=``: running alkstore's enqueue on the application's own connection (ADR 0015).

The core renders one guarded statement in the driver's placeholder style; an
adapter here only runs it on the caller's connection and hands back the ids,
never beginning, committing or rolling back. Drivers are recognised by their
module, so none is imported by ``import alkstore``. Async drivers have async
adapters (``run`` and ``location`` are coroutines), used by ``aenqueue``,
``aenqueue_many`` and ``apublish``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

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

#: What ``conn=`` takes in the async calls (``aenqueue``, ``aenqueue_many``, ``apublish``).
ACCEPTED_ASYNC = {
    "sqlite": "a SQLAlchemy AsyncConnection or AsyncSession (sqlite+aiosqlite) on the store's file",
    "postgres": (
        "a psycopg (3) AsyncConnection or AsyncCursor, an asyncpg Connection, "
        "or a SQLAlchemy AsyncConnection or AsyncSession"
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
    # psycopg's and asyncpg's errors for SQLSTATE 42P01 and 3F000 share these names.
    driver = type(e).__module__.split(".")[0] in {"psycopg", "asyncpg"}
    return driver and type(e).__name__ in {
        "UndefinedTable",
        "UndefinedTableError",
        "InvalidSchemaName",
        "InvalidSchemaNameError",
    }


def _aborts(e: BaseException) -> bool:
    """Whether the failed statement aborted the caller's transaction: on
    Postgres any error does, until the caller rolls back; SQLite's do not."""
    return type(e).__module__.split(".")[0] in {"psycopg", "psycopg2", "asyncpg"}


Params = Sequence[object] | Mapping[str, object]

#: What a statement returns, per row: the id (or offset) and the unique key
#: (the binding matches rows to jobs by key).
Rows = list[tuple[int, str | None]]


def _rows(rows: Sequence[Sequence[Any]]) -> Rows:
    return [(int(r[0]), r[1]) for r in rows]


class Adapter(Protocol):
    paramstyle: str
    #: Set by ``run`` when the statement failed and that aborted the caller's transaction.
    aborted: bool

    def run(self, sql: str, params: Params) -> Rows: ...

    def location(self) -> str: ...


class AsyncAdapter(Protocol):
    paramstyle: str
    aborted: bool

    async def run(self, sql: str, params: Params) -> Rows: ...

    async def location(self) -> str: ...


class _Sqlite3:
    """Python's own sqlite3, a second SQLite copy on the store's file (ADR 0009)."""

    paramstyle = "qmark"

    def __init__(self, conn: sqlite3.Connection | sqlite3.Cursor) -> None:
        self._conn = conn
        self.aborted = False  # a failed SQLite statement leaves the transaction as it was

    def run(self, sql: str, params: Params) -> Rows:
        try:
            rows = self._conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as e:
            if _missing_store(e):
                return []  # not a store at all: the binding reports the mismatch
            raise
        return _rows(rows)

    def location(self) -> str:
        conn = self._conn if isinstance(self._conn, sqlite3.Connection) else self._conn.connection
        row = conn.execute("SELECT file FROM pragma_database_list WHERE name = 'main'").fetchone()
        return f"the SQLite file {row[0]!r}" if row and row[0] else "an in-memory SQLite database"


class _Psycopg:
    """psycopg 3: a Connection, or a Cursor whose connection is used."""

    paramstyle = "format"

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.aborted = False

    def run(self, sql: str, params: Params) -> Rows:
        from psycopg import Error

        try:
            rows = self._conn.execute(sql, params).fetchall()
        except Error as e:
            if _missing_store(e):
                self.aborted = True
                return []  # the store's schema is not on that database
            raise
        return _rows(rows)

    def location(self) -> str:
        conn = getattr(self._conn, "connection", self._conn)
        info = conn.info
        return f"database {info.dbname!r} on {info.host}:{info.port}"


class _SqlAlchemy:
    """A SQLAlchemy Connection, or a Session's connection (its current transaction)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.paramstyle: str = conn.dialect.paramstyle
        self.aborted = False

    def run(self, sql: str, params: Params) -> Rows:
        from sqlalchemy import exc

        args = params if isinstance(params, Mapping) else tuple(params)
        try:
            rows = self._conn.exec_driver_sql(sql, args).fetchall()
        except exc.DBAPIError as e:
            if e.orig is not None and _missing_store(e.orig):
                self.aborted = _aborts(e.orig)
                return []
            raise
        return _rows(rows)

    def location(self) -> str:
        where = f"the database at {self._conn.engine.url.render_as_string(hide_password=True)}"
        return where


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
        self.aborted = False

    def run(self, sql: str, params: Params) -> Rows:
        from django.db import DatabaseError

        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, params)
                rows = cur.fetchall()
        except DatabaseError as e:
            if e.__cause__ is not None and _missing_store(e.__cause__):
                self.aborted = _aborts(e.__cause__)
                return []
            raise
        return _rows(rows)

    def location(self) -> str:
        where = f"the Django database {self._conn.alias!r} ({self._conn.settings_dict.get('NAME')!r})"
        return where


class _AsyncPsycopg:
    """psycopg 3's AsyncConnection, or an AsyncCursor whose connection is used."""

    paramstyle = "format"

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.aborted = False

    async def run(self, sql: str, params: Params) -> Rows:
        from psycopg import Error

        try:
            rows = await (await self._conn.execute(sql, params)).fetchall()
        except Error as e:
            if _missing_store(e):
                self.aborted = True
                return []
            raise
        return _rows(rows)

    async def location(self) -> str:
        return _Psycopg(self._conn).location()


class _Asyncpg:
    """An asyncpg Connection (or a pool's connection proxy): ``fetch`` with ``$N``."""

    paramstyle = "dollar"

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.aborted = False

    async def run(self, sql: str, params: Params) -> Rows:
        from asyncpg import PostgresError

        try:
            rows = await self._conn.fetch(sql, *params)
        except PostgresError as e:
            if _missing_store(e):
                self.aborted = True
                return []
            raise
        return _rows(rows)

    async def location(self) -> str:
        # asyncpg has no public view of where it connected, and a query cannot
        # ask: the failed statement may have aborted the caller's transaction.
        # Its connection parameters say it; anything unexpected there says less.
        params, addr = getattr(self._conn, "_params", None), getattr(self._conn, "_addr", None)
        database = getattr(params, "database", None)
        where = f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) and len(addr) == 2 else str(addr)
        found = f"database {database!r} on {where}" if database else "another database (asyncpg)"
        return found


class _AsyncSqlAlchemy:
    """A SQLAlchemy AsyncConnection, or an AsyncSession's connection (its current transaction)."""

    def __init__(self, conn: Any, dialect: Any, url: Any) -> None:
        self._conn = conn
        self._url = url
        self.paramstyle: str = "dollar" if dialect.paramstyle == "numeric_dollar" else dialect.paramstyle
        self.aborted = False

    async def run(self, sql: str, params: Params) -> Rows:
        from sqlalchemy import exc
        from sqlalchemy.ext.asyncio import AsyncSession

        conn = await self._conn.connection() if isinstance(self._conn, AsyncSession) else self._conn
        args = params if isinstance(params, Mapping) else tuple(params)
        try:
            result = await conn.exec_driver_sql(sql, args)
        except exc.DBAPIError as e:
            # asyncpg's error sits one adapter deeper than a sync driver's.
            orig = e.orig.__cause__ if e.orig is not None and e.orig.__cause__ is not None else e.orig
            if orig is not None and _missing_store(orig):
                self.aborted = _aborts(orig)
                return []
            raise
        return _rows(result.fetchall())

    async def location(self) -> str:
        return f"the database at {self._url.render_as_string(hide_password=True)}"


def _async_sqlalchemy(conn: object, engine: str) -> _AsyncSqlAlchemy | None:
    """The adapter when ``conn`` is a SQLAlchemy AsyncConnection or AsyncSession of this engine's dialect."""
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

    if isinstance(conn, AsyncSession):
        bind = conn.sync_session.get_bind()
        dialect, url = bind.dialect, bind.engine.url
    elif isinstance(conn, AsyncConnection):
        dialect, url = conn.dialect, conn.engine.url
    else:
        return None
    return _AsyncSqlAlchemy(conn, dialect, url) if dialect.name == DIALECTS[engine] else None


def _sync_adapter(conn: object, engine: str) -> Adapter | None:
    kind = type(conn)
    package = kind.__module__.split(".")[0]
    if engine == "sqlite" and isinstance(conn, (sqlite3.Connection, sqlite3.Cursor)):
        return _Sqlite3(conn)
    if engine == "postgres" and package == "psycopg":
        from psycopg import Connection, Cursor, ServerCursor

        if isinstance(conn, (Connection, Cursor)) and not isinstance(conn, ServerCursor):
            return _Psycopg(conn)
    if package == "sqlalchemy" and (found := _sqlalchemy(conn, engine)) is not None:
        return found
    # `django.db.connection` is a proxy (django.utils.connection); `connections[alias]`
    # a backend's DatabaseWrapper. Both answer `vendor`.
    if package == "django" and getattr(conn, "vendor", None) == VENDORS[engine]:
        return _Django(conn)
    return None


def _async_adapter(conn: object, engine: str) -> AsyncAdapter | None:
    kind = type(conn)
    package = kind.__module__.split(".")[0]
    if engine == "postgres" and package == "psycopg":
        from psycopg import AsyncConnection, AsyncCursor, AsyncServerCursor

        if isinstance(conn, (AsyncConnection, AsyncCursor)) and not isinstance(conn, AsyncServerCursor):
            return _AsyncPsycopg(conn)
    if engine == "postgres" and package == "asyncpg":
        from asyncpg import Connection
        from asyncpg.pool import PoolConnectionProxy

        if isinstance(conn, (Connection, PoolConnectionProxy)):
            return _Asyncpg(conn)
    if package == "sqlalchemy" and (found := _async_sqlalchemy(conn, engine)) is not None:
        return found
    return None


def adapter(conn: object, engine: str, asynchronous: bool) -> Adapter | AsyncAdapter:
    """The adapter for ``conn`` on a store of ``engine``, for a sync call (``enqueue``)
    or an async one (``aenqueue``); a TypeError naming what that call accepts."""
    found = _async_adapter(conn, engine) if asynchronous else _sync_adapter(conn, engine)
    if found is not None:
        return found
    kind = type(conn)
    got = f"{kind.__module__}.{kind.__qualname__}"
    if asynchronous:
        other = (
            "; it is a sync connection: use enqueue/enqueue_many/publish"
            if _sync_adapter(conn, engine)
            else ""
        )
        raise TypeError(
            f"conn= of an async call takes {ACCEPTED_ASYNC[engine]} for this {engine} store, got {got}{other}"
        )
    other = (
        "; it is an async connection: use aenqueue/aenqueue_many/apublish"
        if _async_adapter(conn, engine)
        else ""
    )
    raise TypeError(
        f"conn= takes {ACCEPTED[engine]} for this {engine} store, got {got}{other}; "
        "to enqueue in alkstore's own transaction pass tx= instead"
    )


async def arun(
    adapter: AsyncAdapter,
    sql: str,
    params: Params,
    n: int,
    land: Callable[[Rows, str | None, bool], T],
    refusal: tuple[str, Params] | None = None,
) -> T:
    """Runs the statement on an async driver; ``land`` (the binding) checks the rows and
    shapes the ids, with the caller's database named only when fewer rows than ``n`` came
    back, and whether the failed statement aborted the caller's transaction. ``refusal``
    (from core) explains missing rows: its rows, if any, are landed instead."""
    rows = await adapter.run(sql, params)
    if len(rows) != n and refusal is not None:
        rows = await adapter.run(*refusal) or rows
    return land(rows, None if len(rows) == n else await adapter.location(), adapter.aborted)


async def ready(value: T) -> T:
    """An awaitable of a value already known (an async call that had nothing to write)."""
    return value
