"""``enqueue(conn=...)``: the job commits with the application's own transaction (SPEC §17, ADR 0015).

Each test uses the real driver on the real database: Python's sqlite3 on the
store's file, psycopg 3 on Postgres. alkstore never begins, commits or rolls
back the caller's transaction.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import alkstore
from tests.conftest import PG_URL, Target, pg_admin_connect
from tests.workers import claimed_after

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer


@pytest.fixture
def app(target: Target) -> Iterator[sqlite3.Connection | psycopg.Connection[tuple[object, ...]]]:
    """The application's own connection to the store's database, in its driver's default mode."""
    if target.engine == "sqlite":
        conn = sqlite3.connect(target.location, timeout=5)
        yield conn
        conn.close()
    elif target.pooled:
        # Behind a transaction pooler the application's driver must not prepare
        # named statements either (psycopg: prepare_threshold=None).
        with psycopg.connect(target.location, prepare_threshold=None) as pg:
            yield pg
    else:
        with psycopg.connect(PG_URL) as pg:
            yield pg


def test_the_job_exists_exactly_when_the_callers_transaction_commits(
    store: alkstore.Store, target: Target, app: sqlite3.Connection | psycopg.Connection[tuple[object, ...]]
) -> None:
    q = store.queue("emails", max_attempts=7)
    orders = target.table("orders")
    app.execute(f"CREATE TABLE {orders} (email TEXT NOT NULL)")
    app.commit()

    app.execute(f"INSERT INTO {orders} (email) VALUES ('gone@x')")
    gone = q.enqueue({"to": "gone@x"}, conn=app)
    app.rollback()
    assert q.get_job(gone) is None and q.stats().pending == 0, "rolled back with the order"

    app.execute(f"INSERT INTO {orders} (email) VALUES ('a@b')")
    first = q.enqueue({"to": "a@b"}, priority=3, conn=app)
    more = q.enqueue_many([{"n": 1}, {"n": 2}], delay=60, conn=app.cursor())
    assert q.get_job(first) is None, "invisible until the caller commits"
    app.commit()
    assert first < more[0] < more[1], "ids ascend in input order"
    job = q.get_job(first)
    assert job is not None and (job.payload, job.priority, job.max_attempts) == ({"to": "a@b"}, 3, 7)
    handle = q.claim("w")
    assert handle is not None and handle.id == first, "the delayed ones wait"
    assert q.stats().scheduled == 2
    assert q.enqueue_many([], conn=app) == []


def test_a_waiting_claim_wakes_when_the_caller_commits(
    store: alkstore.Store, target: Target, app: sqlite3.Connection | psycopg.Connection[tuple[object, ...]]
) -> None:
    def commit() -> int:
        job_id = store.queue("emails").enqueue({}, conn=app)
        app.commit()
        return job_id

    job, job_id = claimed_after(target, "emails", commit)
    assert job is not None and job.id == job_id


def test_bad_input_is_refused_before_anything_is_written(
    store: alkstore.Store, app: sqlite3.Connection | psycopg.Connection[tuple[object, ...]]
) -> None:
    q = store.queue("emails")
    with pytest.raises(ValueError, match="max_attempts must be >= 1"):
        q.enqueue({}, max_attempts=0, conn=app)
    with pytest.raises(TypeError):
        q.enqueue_many([{}, object()], conn=app)  # type: ignore[list-item]
    with store.transaction() as tx, pytest.raises(TypeError, match=r"tx= .* or conn= .*not both"):
        q.enqueue({}, tx=tx, conn=app)
    app.commit()
    assert store.queues() == []


def test_an_object_that_is_no_connection_of_this_engine_is_a_type_error(
    store: alkstore.Store, target: Target
) -> None:
    q = store.queue("emails")
    accepted = "sqlite3.Connection" if target.engine == "sqlite" else "psycopg"
    for wrong in [object(), "app.db"]:
        with pytest.raises(TypeError, match=f"conn= takes .*{accepted}"):
            q.enqueue({}, conn=wrong)
    if target.engine == "postgres":
        other = sqlite3.connect(":memory:")
        with pytest.raises(TypeError, match="psycopg"):
            q.enqueue({}, conn=other)
        other.close()
    assert store.queues() == []


def test_a_connection_to_another_sqlite_file_is_a_transaction_error(tmp_path: object) -> None:
    base = str(tmp_path)
    with alkstore.open(f"{base}/mine.db") as mine, alkstore.open(f"{base}/theirs.db") as theirs:
        q = mine.queue("emails")
        for path in (f"{base}/theirs.db", f"{base}/plain.db"):
            conn = sqlite3.connect(path)
            mismatch = r"conn= reaches .*(theirs|plain)\.db.*mine\.db"
            with pytest.raises(alkstore.TransactionError, match=mismatch):
                q.enqueue({}, conn=conn)
            conn.rollback()
            conn.close()
        from sqlalchemy import create_engine

        plain = create_engine(f"sqlite:///{base}/plain.db")
        refused = pytest.raises(alkstore.TransactionError, match=r"conn= reaches .*plain\.db")
        with plain.connect() as c, refused:
            q.enqueue({}, conn=c)
        plain.dispose()
        assert mine.queues() == [] and theirs.queues() == []


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_connection_to_another_postgres_database_is_a_transaction_error(target: Target) -> None:
    other_db = "alkstore_other_" + uuid.uuid4().hex[:8]
    with pg_admin_connect() as admin:
        admin.execute(f'CREATE DATABASE "{other_db}"')
    try:
        with target.open() as store, psycopg.connect(PG_URL.rsplit("/", 1)[0] + "/" + other_db) as conn:
            # The store's schema is not there: the failed statement aborted the caller's
            # transaction, and the message says so (issue 23).
            aborted = "nothing was written; the failed statement aborted the transaction on that connection"
            with pytest.raises(
                alkstore.TransactionError, match=f"conn= reaches database '{other_db}'.*{aborted}"
            ):
                store.queue("emails").enqueue({}, conn=conn)
            with pytest.raises(psycopg.errors.InFailedSqlTransaction):
                conn.execute("SELECT 1")
            conn.rollback()
            assert store.queues() == []
    finally:
        with pg_admin_connect() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{other_db}"')


def test_a_copied_sqlite_file_is_another_store(tmp_path: Path) -> None:
    """Issue 23: a copy keeps the store's id, and enqueue(conn=<the copy>) used to
    succeed, landing the job where this store's workers never look."""
    original, copy = tmp_path / "app.db", tmp_path / "copy.db"
    with alkstore.open(original) as store:
        q = store.queue("emails")
        q.enqueue({"n": 1})
        source = sqlite3.connect(original)
        into = sqlite3.connect(copy)
        source.backup(into)  # a consistent copy of the live file
        source.close()
        with pytest.raises(alkstore.TransactionError, match=r"conn= reaches .*copy\.db.*app\.db"):
            q.enqueue({"n": 2}, conn=into)
        with pytest.raises(alkstore.TransactionError, match=r"conn= reaches .*copy\.db"):
            store.stream("s").publish({"n": 2}, conn=into)
        into.commit()
        assert into.execute("SELECT count(*) FROM __alkstore_jobs").fetchone() == (1,), "nothing written"
        into.close()
        # The original, reached by another spelling of its path, is still this store.
        same = sqlite3.connect(tmp_path / "." / "app.db")
        job_id = q.enqueue({"n": 3}, conn=same)
        same.commit()
        same.close()
        assert q.get_job(job_id) is not None


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_postgres_database_created_from_the_stores_as_a_template_is_another_store(target: Target) -> None:
    """Issue 23: CREATE DATABASE ... TEMPLATE copies the store's id with its tables."""
    source_db, copy_db = ("alkstore_tpl_" + uuid.uuid4().hex[:8] for _ in range(2))
    base = PG_URL.rsplit("/", 1)[0]
    with pg_admin_connect() as admin:
        admin.execute(f'CREATE DATABASE "{source_db}"')
    try:
        with alkstore.open(f"{base}/{source_db}") as store:
            store.queue("emails").enqueue({"n": 1})
        # A template may have no other session: the store above is closed.
        with pg_admin_connect() as admin:
            admin.execute(f'CREATE DATABASE "{copy_db}" TEMPLATE "{source_db}"')
        with alkstore.open(f"{base}/{source_db}") as store, psycopg.connect(f"{base}/{copy_db}") as conn:
            q = store.queue("emails")
            with pytest.raises(alkstore.TransactionError, match=f"conn= reaches database '{copy_db}'"):
                q.enqueue({"n": 2}, conn=conn)
            conn.rollback()
            row = conn.execute("SELECT count(*) FROM alkstore.jobs").fetchone()
            assert row == (1,), "nothing written to the copy"
            with psycopg.connect(f"{base}/{source_db}") as mine:
                job_id = q.enqueue({"n": 3}, conn=mine)
            assert q.get_job(job_id) is not None, "the original is still this store"
    finally:
        with pg_admin_connect() as admin:
            for db in (copy_db, source_db):
                admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def test_an_outbox_message_commits_with_the_callers_transaction(
    store: alkstore.Store, app: sqlite3.Connection | psycopg.Connection[tuple[object, ...]]
) -> None:
    ob = store.outbox("hooks")
    gone = ob.enqueue({"event": "order.cancelled"}, conn=app)
    app.rollback()
    assert ob.get_job(gone) is None
    kept = ob.enqueue({"event": "order.created"}, priority=2, conn=app)
    assert ob.get_job(kept) is None, "not before the caller commits"
    app.commit()
    message = ob.claim("relay")
    assert message is not None and (message.id, message.payload, message.priority) == (
        kept,
        {"event": "order.created"},
        2,
    )


def sqlalchemy_url(target: Target) -> str:
    if target.engine == "sqlite":
        return f"sqlite:///{target.location}"
    return PG_URL.replace("postgresql://", "postgresql+psycopg://", 1)


def test_a_sqlalchemy_connection_and_session_carry_the_job_in_their_transaction(
    store: alkstore.Store, target: Target
) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import Session

    q = store.queue("emails")
    orders = target.table("orders")
    connect_args = {"timeout": 5} if target.engine == "sqlite" else {}
    db = create_engine(sqlalchemy_url(target), connect_args=connect_args)
    try:
        with db.begin() as c:
            c.execute(text(f"CREATE TABLE {orders} (email TEXT NOT NULL)"))
        with db.connect() as c:
            c.execute(text(f"INSERT INTO {orders} (email) VALUES ('gone@x')"))
            gone = q.enqueue({"to": "gone@x"}, conn=c)
            c.rollback()
            assert q.get_job(gone) is None, "rolled back with the order"
            c.execute(text(f"INSERT INTO {orders} (email) VALUES ('a@b')"))
            kept = q.enqueue_many([{"to": "a@b"}, {"to": "c@d"}], conn=c)
            assert q.get_job(kept[0]) is None, "not before the caller commits"
            c.commit()
        with Session(db) as s:
            s.execute(text(f"INSERT INTO {orders} (email) VALUES ('e@f')"))
            in_session = q.enqueue({"to": "e@f"}, conn=s)
            s.commit()
        assert [j.payload["to"] for j in q.claim_batch("w", 10)] == ["a@b", "c@d", "e@f"]
        assert kept[0] < kept[1] < in_session
    finally:
        db.dispose()


def test_a_sqlalchemy_connection_of_the_other_engine_is_a_type_error(
    store: alkstore.Store, target: Target
) -> None:
    from sqlalchemy import create_engine

    other = (
        "sqlite://"
        if target.engine == "postgres"
        else PG_URL.replace("postgresql://", "postgresql+psycopg://")
    )
    db = create_engine(other)
    try:
        with db.connect() as c, pytest.raises(TypeError, match="SQLAlchemy Connection or Session"):
            store.queue("emails").enqueue({}, conn=c)
    finally:
        db.dispose()


def test_django_connection_carries_the_job_in_transaction_atomic(
    store: alkstore.Store, target: Target
) -> None:
    helper = Path(__file__).parent / "helpers" / "django_conn.py"
    # A pooled target's helper connects directly (`argv`): Django's own driver
    # settings for a pooler are the application's business, not alkstore's.
    args = [target.location] if target.engine == "sqlite" else target.argv()
    out = subprocess.run(
        [sys.executable, str(helper), target.engine, *args], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["after_rollback"], result["seen_inside"]) == (False, False), "only with the commit"
    assert (result["claimed"], result["ids_ascend"]) == (["a@b", "now"], True)
    if target.engine == "sqlite":
        assert result["mismatch"].startswith("conn= reaches the Django database 'other'"), result["mismatch"]


def test_a_stream_event_commits_with_the_callers_transaction(
    store: alkstore.Store, target: Target, app: sqlite3.Connection | psycopg.Connection[tuple[object, ...]]
) -> None:
    events = store.stream("orders")
    assert events.publish({"n": 1}) == 1
    events.publish({}, conn=app)
    app.rollback()
    assert events.read(after=1) == [], "rolled back, and its offset with it"
    mine = events.publish({"n": 2}, key="o-2", conn=app)
    assert events.read(after=1) == [], "not before the caller commits"
    app.commit()
    assert mine == 2 and events.publish({"n": 3}) == 3, "offsets run on across both connections"
    assert [(e.offset, e.key, e.payload) for e in events.read()] == [
        (1, None, {"n": 1}),
        (2, "o-2", {"n": 2}),
        (3, None, {"n": 3}),
    ]
    # The head outlives the events: trimming everything reuses no offset, on either connection.
    events.trim_to(4)
    assert events.publish({}, conn=app) == 4
    app.commit()
    assert events.publish({}) == 5
    with pytest.raises(ValueError, match="max_payload_bytes"):
        events.publish("x" * (2 << 20), conn=app)
    with store.transaction() as tx, pytest.raises(TypeError, match="not both"):
        events.publish({}, tx=tx, conn=app)


def test_a_subscriber_wakes_when_the_caller_commits_an_event(
    store: alkstore.Store, target: Target, app: sqlite3.Connection | psycopg.Connection[tuple[object, ...]]
) -> None:
    reader = target.open(poll_interval_s=30.0)
    stop = alkstore.StopToken()
    got: list[int] = []

    def read_one() -> None:
        for event in reader.stream("orders").subscribe("c", stop=stop):
            got.append(event.offset)
            return

    t = threading.Thread(target=read_one)
    t.start()
    time.sleep(0.5)
    try:
        offset = store.stream("orders").publish({"n": 1}, conn=app)
        app.commit()
        t.join(timeout=20)
    finally:
        stop.stop()
        t.join(timeout=20)
        reader.close()
    assert got == [offset], "only the commit's wake explains a prompt read under a 30 s poll"


def test_import_alkstore_imports_no_driver() -> None:
    """The drivers are optional (SPEC §17): adapters import them only when a connection of theirs arrives."""
    drivers = ("psycopg", "asyncpg", "sqlalchemy", "django", "aiosqlite")
    probe = f"import sys, alkstore; print([m for m in {drivers!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"
