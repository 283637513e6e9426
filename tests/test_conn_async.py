"""``aenqueue(conn=...)``: the job commits with the application's own async transaction (SPEC §17, ADR 0015).

Every async driver the SPEC names, for real, on the engine it serves: psycopg 3's
AsyncConnection and AsyncCursor, asyncpg (a connection and a pool's), SQLAlchemy's
AsyncConnection and AsyncSession (asyncpg and psycopg on Postgres, aiosqlite on
SQLite). Each test runs its coroutine with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
import pytest

import alkstore
from tests.conftest import PG_URL, Target, pg_admin_connect
from tests.workers import waiting_claim

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@dataclass
class App:
    """The application's async connection: ``conn`` is what it passes as ``conn=``."""

    conn: object
    execute: Callable[[str], Awaitable[object]]
    commit: Callable[[], Awaitable[object]]
    rollback: Callable[[], Awaitable[object]]


def sqlalchemy_url(target: Target, driver: str) -> str:
    if target.engine == "sqlite":
        return f"sqlite+aiosqlite:///{target.location}"
    return PG_URL.replace("postgresql://", f"postgresql+{driver}://", 1)


@asynccontextmanager
async def psycopg_app(url: str, cursor: bool) -> AsyncIterator[App]:
    c = await psycopg.AsyncConnection.connect(url)
    try:
        yield App(c.cursor() if cursor else c, c.execute, c.commit, c.rollback)
    finally:
        await c.close()


@asynccontextmanager
async def asyncpg_app(url: str, pooled: bool) -> AsyncIterator[App]:
    """asyncpg runs in autocommit until a transaction starts: each commit or
    rollback starts the next, as an application's unit of work would."""
    import asyncpg

    pool = await asyncpg.create_pool(url, min_size=1, max_size=1) if pooled else None
    c = await pool.acquire() if pool is not None else await asyncpg.connect(url)
    tr = c.transaction()
    await tr.start()

    async def end(commit: bool) -> None:
        nonlocal tr
        await (tr.commit() if commit else tr.rollback())
        tr = c.transaction()
        await tr.start()

    try:
        yield App(c, c.execute, lambda: end(True), lambda: end(False))
    finally:
        await tr.rollback()
        if pool is not None:
            await pool.release(c)
            await pool.close()
        else:
            await c.close()


@asynccontextmanager
async def sqlalchemy_app(target: Target, driver: str, session: bool) -> AsyncIterator[App]:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    connect_args = {"timeout": 5} if target.engine == "sqlite" else {}
    db = create_async_engine(sqlalchemy_url(target, driver), connect_args=connect_args)
    try:
        if session:
            async with AsyncSession(db) as s:
                yield App(s, lambda sql: s.execute(text(sql)), s.commit, s.rollback)
        else:
            async with db.connect() as c:
                yield App(c, c.exec_driver_sql, c.commit, c.rollback)
    finally:
        await db.dispose()


KINDS = {
    "sqlite": ["sqlalchemy-aiosqlite-connection", "sqlalchemy-aiosqlite-session"],
    "postgres": [
        "psycopg-connection",
        "psycopg-cursor",
        "asyncpg-connection",
        "asyncpg-pool",
        "sqlalchemy-asyncpg-connection",
        "sqlalchemy-psycopg-session",
    ],
}


def app_for(kind: str, target: Target) -> Any:
    """The async context manager of the application's connection of ``kind``."""
    if kind.startswith("psycopg-"):
        return psycopg_app(PG_URL, cursor=kind.endswith("cursor"))
    if kind.startswith("asyncpg-"):
        return asyncpg_app(PG_URL, pooled=kind.endswith("pool"))
    _, driver, form = kind.split("-")
    return sqlalchemy_app(target, driver, session=form == "session")


#: Every async driver on the engine it serves (``engine`` overrides the conftest fixture).
every_driver = pytest.mark.parametrize(
    ("engine", "kind"), [(e, k) for e, ks in KINDS.items() for k in ks], ids=lambda v: str(v)
)


@every_driver
def test_the_job_exists_exactly_when_the_callers_transaction_commits(
    store: alkstore.Store, target: Target, kind: str
) -> None:
    q = store.queue("emails", max_attempts=7)
    orders = target.table("orders")

    async def main() -> tuple[int, list[int]]:
        async with app_for(kind, target) as app:
            await app.execute(f"CREATE TABLE {orders} (email TEXT NOT NULL)")
            await app.commit()
            await app.execute(f"INSERT INTO {orders} (email) VALUES ('gone@x')")
            gone = await q.aenqueue({"to": "gone@x"}, conn=app.conn)
            await app.rollback()
            assert q.get_job(gone) is None and q.stats().pending == 0, "rolled back with the order"

            await app.execute(f"INSERT INTO {orders} (email) VALUES ('a@b')")
            first = await q.aenqueue({"to": "a@b"}, priority=3, conn=app.conn)
            more = await q.aenqueue_many([{"n": 1}, {"n": 2}], delay=60, conn=app.conn)
            assert q.get_job(first) is None, "invisible until the caller commits"
            assert await q.aenqueue_many([], conn=app.conn) == []
            await app.commit()
            return first, more

    first, more = run(main())
    assert first < more[0] < more[1], "ids ascend in input order"
    job = q.get_job(first)
    assert job is not None and (job.payload, job.priority, job.max_attempts) == ({"to": "a@b"}, 3, 7)
    handle = q.claim("w")
    assert handle is not None and handle.id == first, "the delayed ones wait"
    assert q.stats().scheduled == 2


@every_driver
def test_a_waiting_claim_wakes_when_the_caller_commits(
    store: alkstore.Store, target: Target, kind: str
) -> None:
    async def main() -> tuple[alkstore.JobHandle | None, int]:
        async with app_for(kind, target) as app:
            with waiting_claim(target, "emails") as claimed:
                job_id = await store.queue("emails").aenqueue({}, conn=app.conn)
                await app.commit()
                return claimed(), job_id

    job, job_id = run(main())
    assert job is not None and job.id == job_id


@every_driver
def test_outbox_and_stream_commit_with_the_callers_transaction(
    store: alkstore.Store, target: Target, kind: str
) -> None:
    ob, events = store.outbox("hooks"), store.stream("orders")

    async def main() -> tuple[int, int]:
        async with app_for(kind, target) as app:
            await ob.aenqueue({"event": "order.cancelled"}, conn=app.conn)
            await events.apublish({"n": 0}, conn=app.conn)
            await app.rollback()
            kept = await ob.aenqueue({"event": "order.created"}, conn=app.conn)
            offset = await events.apublish({"n": 1}, key="o-1", conn=app.conn)
            assert ob.get_job(kept) is None and events.read() == [], "not before the caller commits"
            await app.commit()
            return kept, offset

    kept, offset = run(main())
    message = ob.claim("relay")
    assert message is not None and (message.id, message.payload) == (kept, {"event": "order.created"})
    assert [(e.offset, e.key, e.payload) for e in events.read()] == [(1, "o-1", {"n": 1})]
    assert offset == 1, "the rolled-back event took no offset"
    assert events.publish({"n": 2}) == 2, "alkstore's own publish follows on"


@every_driver
def test_bad_input_is_refused_before_anything_is_written(
    store: alkstore.Store, target: Target, kind: str
) -> None:
    q = store.queue("emails")

    async def main() -> None:
        async with app_for(kind, target) as app:
            with pytest.raises(ValueError, match="max_attempts must be >= 1"):
                await q.aenqueue({}, max_attempts=0, conn=app.conn)
            with pytest.raises(TypeError):
                await q.aenqueue_many([{}, object()], conn=app.conn)  # type: ignore[list-item]
            with pytest.raises(ValueError, match="stream"):
                await store.stream("__alkstore_x").apublish({}, conn=app.conn)
            await app.commit()

    run(main())
    assert store.queues() == []


def test_a_sync_connection_in_an_async_call_and_back_is_a_type_error(
    store: alkstore.Store, target: Target
) -> None:
    q = store.queue("emails")
    sync = sqlite3.connect(target.location) if target.engine == "sqlite" else psycopg.connect(PG_URL)

    async def main() -> None:
        with pytest.raises(TypeError, match="sync connection: use enqueue"):
            await q.aenqueue({}, conn=sync)
        with pytest.raises(TypeError, match=r"conn= of an async call takes .*AsyncSession"):
            await q.aenqueue({}, conn=object())
        async with app_for(KINDS[target.engine][0], target) as app:
            with pytest.raises(TypeError, match="async connection: use aenqueue"):
                q.enqueue({}, conn=app.conn)
            with pytest.raises(TypeError, match="async connection: use aenqueue"):
                store.stream("s").publish({}, conn=app.conn)

    try:
        run(main())
    finally:
        sync.close()
    assert store.queues() == []


def test_without_conn_the_async_calls_write_through_the_store(store: alkstore.Store) -> None:
    q, events = store.queue("emails"), store.stream("orders")

    async def main() -> tuple[int, list[int], int]:
        one = await q.aenqueue({"n": 1}, priority=2)
        many = await q.aenqueue_many([{"n": 2}, {"n": 3}])
        offset = await events.apublish({"n": 1}, key="k")
        with pytest.raises(ValueError, match="max_attempts"):
            await q.aenqueue({}, max_attempts=0)
        return one, many, offset

    one, many, offset = run(main())
    assert [j.id for j in q.claim_batch("w", 10)] == [one, *many]
    assert offset == 1 and events.read()[0].key == "k"


@pytest.mark.parametrize("engine", ["postgres"])
@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_a_connection_to_another_postgres_database_is_a_transaction_error(
    target: Target, driver: str
) -> None:
    other_db = "alkstore_other_" + uuid.uuid4().hex[:8]
    url = PG_URL.rsplit("/", 1)[0] + "/" + other_db
    with pg_admin_connect() as admin:
        admin.execute(f'CREATE DATABASE "{other_db}"')

    async def main(store: alkstore.Store) -> None:
        app = psycopg_app(url, cursor=False) if driver == "psycopg" else asyncpg_app(url, pooled=False)
        async with app as a:
            with pytest.raises(alkstore.TransactionError, match=f"conn= reaches database '{other_db}'"):
                await store.queue("emails").aenqueue({}, conn=a.conn)
            await a.rollback()
            with pytest.raises(alkstore.TransactionError, match=f"conn= reaches database '{other_db}'"):
                await store.stream("s").apublish({}, conn=a.conn)

    try:
        with target.open() as store:
            run(main(store))
            assert store.queues() == []
    finally:
        with pg_admin_connect() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{other_db}" WITH (FORCE)')


def test_an_aiosqlite_session_on_another_file_is_a_transaction_error(tmp_path: object) -> None:
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    base = str(tmp_path)

    async def main(q: alkstore.Queue) -> None:
        for path in (f"{base}/theirs.db", f"{base}/plain.db"):
            db = create_async_engine(f"sqlite+aiosqlite:///{path}")
            async with AsyncSession(db) as s:
                with pytest.raises(alkstore.TransactionError, match=r"conn= reaches .*(theirs|plain)\.db"):
                    await q.aenqueue({}, conn=s)
            await db.dispose()

    with alkstore.open(f"{base}/mine.db") as mine, alkstore.open(f"{base}/theirs.db") as theirs:
        run(main(mine.queue("emails")))
        assert mine.queues() == [] and theirs.queues() == []
