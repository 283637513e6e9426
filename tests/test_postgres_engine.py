"""Postgres-only checks: lost connections, SQLSTATEs, schema ownership, payload text (SPEC §2, §6, §13).

Killing a backend needs Postgres' `pg_terminate_backend`; the server is shared,
so only backends that provably belong to this test's store are terminated:
the pid the store's own transaction reports, or backends whose current query
names this test's unique schema.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable

import pytest

import alkstore
from tests.conftest import Target, drop_schema, pg_admin_connect


@pytest.fixture
def engine() -> str:
    """Overrides the conftest's engine parameter: every test here is Postgres-only."""
    return "postgres"


def terminate(pid: int) -> None:
    with pg_admin_connect() as conn:
        row = conn.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()
    assert row is not None and row[0] is True


def test_terminated_tx_backend_raises_connection_lost(store: alkstore.Store) -> None:
    q = store.queue("q")
    kept = q.enqueue({"committed": True})
    with pytest.raises(alkstore.ConnectionLost), store.transaction() as tx:
        lost = q.enqueue({"in": "tx"}, tx=tx)
        pid = tx.query("SELECT pg_backend_pid()::bigint AS pid")[0]["pid"]
        assert isinstance(pid, int)
        terminate(pid)
        tx.execute("SELECT 1")
    # the next plain calls work on a fresh connection
    after = q.enqueue({"after": True})
    assert q.get_job(lost) is None
    job = q.get_job(kept)
    assert job is not None and job.payload == {"committed": True}
    got = [q.claim("w"), q.claim("w")]
    assert [h.id for h in got if h is not None] == [kept, after]
    assert q.claim("w") is None


def test_connection_lost_is_database_error(store: alkstore.Store) -> None:
    with pytest.raises(alkstore.DatabaseError), store.transaction() as tx:
        terminate(tx.query("SELECT pg_backend_pid()::bigint AS pid")[0]["pid"])
        tx.query("SELECT 1 AS one")
    store.queue("q").enqueue({})


def test_terminated_pool_recovers(store: alkstore.Store, target: Target) -> None:
    """Like a server restart: every backend of the store dies; at most one call fails, then it reconnects."""
    q = store.queue("q")
    ids = q.enqueue_many([{"n": n} for n in range(5)])
    assert q.stats().pending == 5
    with pg_admin_connect() as conn:
        rows = conn.execute(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND position(%s in query) > 0",
            [target.schema],
        ).fetchall()
    if not rows:
        pytest.skip("no backend's last query names the test schema, so none can be safely terminated")
    with contextlib.suppress(alkstore.ConnectionLost):
        q.stats()  # the in-flight call may fail; the next must not
    assert q.stats().pending == 5
    claimed = []
    while (h := q.claim("w")) is not None:
        assert h.ack()
        claimed.append(h.id)
    assert claimed == ids


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("SELECT * FROM no_such_table_xyz", "42P01"),
        ("SELEKT 1", "42601"),
        ("SELECT 1/0", "22012"),
    ],
)
def test_database_error_has_sqlstate(store: alkstore.Store, sql: str, code: str) -> None:
    with pytest.raises(alkstore.DatabaseError) as err, store.transaction() as tx:
        tx.query(sql)
    assert err.value.code == code


def test_unique_violation_sqlstate(store: alkstore.Store, target: Target) -> None:
    table = target.table("u")
    with store.transaction() as tx:
        tx.execute(f"CREATE TABLE {table} (k text PRIMARY KEY)")
    with pytest.raises(alkstore.DatabaseError) as err, store.transaction() as tx:
        tx.execute(f"INSERT INTO {table} VALUES ($1), ($1)", ["dup"])
    assert err.value.code == "23505"


@pytest.mark.parametrize(
    "stmt",
    [
        "ABORT",
        "COMMIT AND CHAIN",
        "ROLLBACK AND CHAIN",
        "END TRANSACTION",
        "COMMIT WORK",
        "-- note\nROLLBACK",
    ],
)
def test_every_statement_that_ends_the_transaction_is_refused(
    store_factory: Callable[..., alkstore.Store], target: Target, stmt: str
) -> None:
    """Detected from the server's side, so AND CHAIN (a new transaction at once) is caught too."""
    store = store_factory(pool_size=1)  # the one connection must come back outside a transaction
    q = store.queue("q")
    table = target.table("t")
    with store.transaction() as tx:
        tx.execute(f"CREATE TABLE {table} (n int)")
    with pytest.raises(alkstore.TransactionError), store.transaction() as tx:
        with pytest.raises(alkstore.TransactionError, match="ended the transaction"):
            tx.execute(stmt)
        with pytest.raises(alkstore.TransactionError):
            q.enqueue({"after": True}, tx=tx)
        with pytest.raises(alkstore.TransactionError):
            tx.execute(f"INSERT INTO {table} VALUES (1)")
    q.enqueue({"autocommitted": True})
    with pg_admin_connect() as conn:
        rows = conn.execute(f'SELECT payload::text FROM "{target.schema}".jobs').fetchall()
        n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert [json.loads(str(r[0])) for r in rows] == [{"autocommitted": True}]
    assert n is not None and n[0] == 0


@pytest.mark.parametrize("stmt", ["BEGIN", "START TRANSACTION", "/* c */ begin isolation level serializable"])
def test_begin_inside_the_transaction_has_the_servers_sqlstate(store: alkstore.Store, stmt: str) -> None:
    with pytest.raises(alkstore.TransactionError), store.transaction() as tx:
        with pytest.raises(alkstore.DatabaseError) as err:
            tx.execute(stmt)
        assert err.value.code == "25001"  # active_sql_transaction


def test_payload_text_keeps_key_order(store: alkstore.Store, target: Target) -> None:
    q = store.queue("q")
    payload = {"b": 1, "a": 2, "nested": {"z": 1, "y": [1.0, 10**30]}}
    job_id = q.enqueue(payload)
    job = q.get_job(job_id)
    assert job is not None
    assert json.dumps(job.payload) == json.dumps(payload)
    with pg_admin_connect() as conn:
        row = conn.execute(
            f'SELECT payload::text FROM "{target.schema}".jobs WHERE id = %s', [job_id]
        ).fetchone()
    assert row is not None, "ADR 0001: live rows are in <schema>.jobs"
    stored = str(row[0])
    keys = json.loads(stored, object_pairs_hook=lambda kv: [k for k, _ in kv])
    assert keys == ["b", "a", "nested"]
    assert json.loads(stored) == json.loads(json.dumps(payload))


def test_engine_tables_live_in_own_schema(store: alkstore.Store, target: Target) -> None:
    def tables() -> set[str]:
        with pg_admin_connect() as conn:
            rows = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", [target.schema]
            ).fetchall()
        return {str(r[0]) for r in rows}

    before = tables()
    assert {"jobs", "dead", "meta"} <= before, before
    for name in ("a", "b", "c", "d"):
        store.queue(name).enqueue({})
    assert tables() == before  # queues are rows, never a table per queue


def test_newer_schema_version_refused(target: Target) -> None:
    with target.open() as store:
        store.queue("q").enqueue({})
    with pg_admin_connect() as conn:
        n = conn.execute(
            f"UPDATE \"{target.schema}\".meta SET value = '999999' WHERE key = 'schema_version'"
        ).rowcount
    assert n == 1, "ADR 0001: <schema>.meta holds the schema_version row"
    with pytest.raises(alkstore.DatabaseError, match=r"(?i)newer|version"):
        target.open()


def test_two_schemas_are_isolated(store: alkstore.Store, target: Target) -> None:
    assert target.schema is not None
    other_schema = target.schema + "_b"
    other = Target("postgres", target.location, other_schema)
    try:
        with other.open() as second:
            second.queue("q").enqueue({"other": True})
            q = store.queue("q")
            assert q.stats().pending == 0
            assert q.claim("w") is None
    finally:
        drop_schema(other_schema)


def test_listen_false_polls(store_factory: Callable[..., alkstore.Store]) -> None:
    """`listen=False` (PgBouncer transaction mode) still finds new work, by polling."""
    waiter = store_factory(listen=False, poll_interval_s=0.2)
    producer = store_factory()
    q = waiter.queue("q")

    def produce() -> None:
        time.sleep(0.3)
        producer.queue("q").enqueue({"polled": True})

    t = threading.Thread(target=produce)
    t.start()
    started = time.monotonic()
    h = q.claim("w", timeout=20)
    t.join(10)
    assert h is not None and h.payload == {"polled": True}
    assert time.monotonic() - started < 5


def test_small_pool_serves_many_threads(store_factory: Callable[..., alkstore.Store]) -> None:
    store = store_factory(pool_size=2)
    q = store.queue("q", visibility_timeout_s=600)
    ids = q.enqueue_many([{"n": n} for n in range(300)])
    seen: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            while (h := q.claim("w")) is not None:
                assert h.ack()
                with lock:
                    seen.append(h.id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert sorted(seen) == ids
