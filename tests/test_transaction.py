"""The transaction seam with the caller's business write (SPEC §6, §13).

The user's own table is created per test with a unique name; on Postgres it
lives in the test's schema, so it is dropped with it. Placeholders are the
engine's own (`?` on SQLite, `$1` on Postgres).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import alkstore
from tests.conftest import Target

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer


@pytest.fixture
def orders(store: alkstore.Store, target: Target) -> Iterator[str]:
    """A committed user table `orders(id, user_id, note)`."""
    name = target.table("orders")
    idcol = (
        "INTEGER PRIMARY KEY"
        if target.engine == "sqlite"
        else "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
    )
    with store.transaction() as tx:
        tx.execute(f"CREATE TABLE {name} (id {idcol}, user_id bigint NOT NULL, note text UNIQUE)")
    yield name


def count(store: alkstore.Store, table: str) -> int:
    with store.transaction() as tx:
        rows = tx.query(f"SELECT count(*) AS n FROM {table}")
    return int(rows[0]["n"])


def test_commit_business_row_and_job(store: alkstore.Store, target: Target, orders: str) -> None:
    q = store.queue("q")
    p1, p2 = target.ph(1), target.ph(2)
    with store.transaction() as tx:
        assert tx.execute(f"INSERT INTO {orders} (user_id, note) VALUES ({p1}, {p2})", [42, "first"]) == 1
        rows = tx.query(f"SELECT id, user_id, note FROM {orders} WHERE user_id = {p1}", [42])
        assert isinstance(rows, list) and len(rows) == 1
        assert set(rows[0]) == {"id", "user_id", "note"}
        assert rows[0]["user_id"] == 42 and rows[0]["note"] == "first"
        job_id = q.enqueue({"order": rows[0]["id"]}, tx=tx)
        seen = q.get_job(job_id, tx=tx)  # the tx sees its own write
        assert seen is not None and seen.payload == {"order": rows[0]["id"]}
    assert count(store, orders) == 1
    job = q.get_job(job_id)
    assert job is not None and job.state == "pending"
    h = q.claim("w")
    assert h is not None and h.id == job_id


def test_exception_rolls_back_everything(store: alkstore.Store, target: Target, orders: str) -> None:
    q = store.queue("q")

    class Boom(Exception):
        pass

    with pytest.raises(Boom), store.transaction() as tx:
        tx.execute(f"INSERT INTO {orders} (user_id) VALUES ({target.ph(1)})", [1])
        q.enqueue({"a": 1}, tx=tx)
        q.enqueue_many([{"b": 1}, {"b": 2}], tx=tx)
        raise Boom
    assert count(store, orders) == 0
    s = q.stats()
    assert (s.pending, s.scheduled, s.processing, s.dead) == (0, 0, 0, 0)
    assert q.claim("w") is None


def test_execute_rowcount(store: alkstore.Store, target: Target, orders: str) -> None:
    p = target.ph
    with store.transaction() as tx:
        n = tx.execute(
            f"INSERT INTO {orders} (user_id, note) VALUES ({p(1)}, 'a'), ({p(2)}, 'b'), ({p(3)}, 'c')",
            [1, 1, 2],
        )
        assert n == 3
        assert tx.execute(f"UPDATE {orders} SET user_id = 9 WHERE user_id = {p(1)}", [1]) == 2
        assert tx.execute(f"DELETE FROM {orders} WHERE user_id = {p(1)}", [12345]) == 0
        assert tx.query(f"SELECT note FROM {orders} WHERE user_id = 9 ORDER BY note") == [
            {"note": "a"},
            {"note": "b"},
        ]
        assert tx.query(f"SELECT note FROM {orders} WHERE user_id = 12345") == []


def test_params_round_trip(store: alkstore.Store, target: Target) -> None:
    name = target.table("params")
    if target.engine == "sqlite":
        ddl = f"CREATE TABLE {name} (n, b, i, f, s, bl)"
    else:
        ddl = f"CREATE TABLE {name} (n text, b boolean, i bigint, f double precision, s text, bl bytea)"
    values = [None, True, -(2**62), 0.1, "héllo ☃", b"\x00\xffbytes"]
    ph = ", ".join(target.ph(i) for i in range(1, 7))
    with store.transaction() as tx:
        tx.execute(ddl)
        assert tx.execute(f"INSERT INTO {name} (n, b, i, f, s, bl) VALUES ({ph})", values) == 1
        rows = tx.query(f"SELECT n, b, i, f, s, bl FROM {name}")
    assert len(rows) == 1
    row = rows[0]
    assert row["n"] is None
    assert row["b"] == True  # noqa: E712 - SQLite stores a bool as the integer 1
    assert row["i"] == -(2**62) and isinstance(row["i"], int)
    assert row["f"] == 0.1 and isinstance(row["f"], float)
    assert row["s"] == "héllo ☃"
    assert row["bl"] == b"\x00\xffbytes" and isinstance(row["bl"], bytes)


def test_params_default_to_none(store: alkstore.Store) -> None:
    with store.transaction() as tx:
        assert tx.query("SELECT 1 AS one") == [{"one": 1}]


def test_tx_ops_commit(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=5)
    a, b, c, d, e, f = q.enqueue_many(list("abcdef"))
    ha, hb, hc, hd, he = q.claim_batch("w", 5)
    with store.transaction() as tx:
        assert ha.ack(tx=tx) is True
        assert q.ack_batch([hb], tx=tx) == 1
        assert hc.retry("again", delay=0, tx=tx) is True
        assert hd.fail("bad", tx=tx) is True
        assert q.cancel(he.id, tx=tx) is True
        assert q.cancel(f, tx=tx) is True
        assert q.get_job(a, tx=tx) is None
        got_c = q.get_job(c, tx=tx)
        assert got_c is not None and got_c.state == "pending"
    assert q.get_job(a) is None and q.get_job(b) is None
    assert q.get_job(e) is None and q.get_job(f) is None
    jc, jd = q.get_job(c), q.get_job(d)
    assert jc is not None and jc.state == "pending"
    assert jd is not None and (jd.state, jd.last_error) == ("dead", "bad")


def test_tx_ops_roll_back(store: alkstore.Store) -> None:
    q = store.queue("q", max_attempts=5)
    ids = q.enqueue_many(list("abcde"))
    ha, hb, hc, hd, he = q.claim_batch("w", 5)
    with pytest.raises(RuntimeError), store.transaction() as tx:
        assert ha.ack(tx=tx)
        assert q.ack_batch([hb], tx=tx) == 1
        assert hc.retry("again", delay=0, tx=tx)
        assert hd.fail("bad", tx=tx)
        assert q.cancel(he.id, tx=tx)
        raise RuntimeError("abort")
    for job_id in ids:
        job = q.get_job(job_id)
        assert job is not None and job.state == "processing"
    # the handles are still valid: nothing landed
    assert ha.ack() and hb.ack() and hc.retry("x", delay=0) and hd.fail("y") and he.release()


def test_nested_transaction_refused(store: alkstore.Store) -> None:
    q = store.queue("q")
    with store.transaction() as tx:
        job_id = q.enqueue({}, tx=tx)
        with pytest.raises(alkstore.TransactionError), store.transaction():
            pass
        assert q.get_job(job_id, tx=tx) is not None  # the outer tx is still usable
    assert q.get_job(job_id) is not None


def test_untransacted_calls_refused_inside_block(store: alkstore.Store) -> None:
    q = store.queue("q")
    ready = q.enqueue({"ready": True})
    h = q.claim("w")
    assert h is not None
    other = q.enqueue({})
    with store.transaction() as tx:
        for call in (
            lambda: q.claim("w"),
            lambda: q.claim_batch("w", 2),
            lambda: q.stats(),
            lambda: q.enqueue({}),
            lambda: q.enqueue_many([{}]),
            lambda: q.get_job(ready),
            lambda: q.cancel(other),
            lambda: q.sweep_expired(),
            lambda: q.dead_jobs(),
            lambda: h.ack(),
            lambda: h.heartbeat(),
            lambda: h.release(),
        ):
            with pytest.raises(alkstore.TransactionError):
                call()
        q.enqueue({"in": "tx"}, tx=tx)
    s = q.stats()
    assert (s.pending, s.processing) == (2, 1)
    assert h.ack()


def test_tx_after_block_is_closed(store: alkstore.Store) -> None:
    q = store.queue("q")
    with store.transaction() as tx:
        pass
    with pytest.raises(alkstore.TransactionClosed):
        tx.execute("SELECT 1")
    with pytest.raises(alkstore.TransactionClosed):
        tx.query("SELECT 1")
    with pytest.raises(alkstore.TransactionClosed):
        q.enqueue({}, tx=tx)
    assert q.stats().pending == 0
    q.enqueue({})  # the thread is free again
    assert q.stats().pending == 1


def test_tx_after_rollback_is_closed(store: alkstore.Store) -> None:
    q = store.queue("q")
    with pytest.raises(ZeroDivisionError), store.transaction() as tx:
        1 / 0  # noqa: B018
    with pytest.raises(alkstore.TransactionClosed):
        q.enqueue({}, tx=tx)


def test_failing_sql_raises_and_rolls_back(store: alkstore.Store, target: Target, orders: str) -> None:
    q = store.queue("q")
    p1 = target.ph(1)
    with pytest.raises(alkstore.DatabaseError) as err, store.transaction() as tx:
        tx.execute(f"INSERT INTO {orders} (user_id, note) VALUES (1, {p1})", ["dup"])
        q.enqueue({"lost": True}, tx=tx)
        tx.execute(f"INSERT INTO {orders} (user_id, note) VALUES (2, {p1})", ["dup"])  # UNIQUE
    assert err.value.code is not None
    assert not isinstance(err.value, alkstore.ConnectionLost)
    assert count(store, orders) == 0
    assert q.stats().pending == 0


def test_bad_sql_is_database_error(store: alkstore.Store) -> None:
    with pytest.raises(alkstore.DatabaseError) as err, store.transaction() as tx:
        tx.query("SELEKT nonsense")
    assert isinstance(err.value.code, str) and err.value.code


def test_swallowed_error_dooms_the_tx(store: alkstore.Store, target: Target, orders: str) -> None:
    q = store.queue("q")
    with pytest.raises(alkstore.TransactionError), store.transaction() as tx:
        tx.execute(f"INSERT INTO {orders} (user_id, note) VALUES (1, 'kept?')")
        q.enqueue({"lost": True}, tx=tx)
        with pytest.raises(alkstore.DatabaseError):
            tx.execute("INSERT INTO no_such_table_anywhere VALUES (1)")
        with pytest.raises(alkstore.TransactionError):
            tx.execute("SELECT 1")
        with pytest.raises(alkstore.TransactionError):
            q.enqueue({}, tx=tx)
    assert count(store, orders) == 0
    assert q.stats().pending == 0
    q.enqueue({"after": True})
    assert q.stats().pending == 1


@pytest.mark.parametrize("stmt", ["COMMIT", "END", "ROLLBACK", "commit", "/* why */ COMMIT"])
@pytest.mark.parametrize("via", ["execute", "query"])
def test_a_statement_that_ends_the_transaction_is_refused(
    store: alkstore.Store, target: Target, orders: str, stmt: str, via: str
) -> None:
    """The caller's COMMIT/ROLLBACK is refused and dooms the transaction: nothing after it commits."""
    q = store.queue("q")
    with pytest.raises(alkstore.TransactionError, match="rolled back"), store.transaction() as tx:
        run = tx.execute if via == "execute" else tx.query
        with pytest.raises(alkstore.TransactionError, match="ended the transaction"):
            run(stmt)
        with pytest.raises(alkstore.TransactionError):
            q.enqueue({"after": True}, tx=tx)
        with pytest.raises(alkstore.TransactionError):
            tx.execute(f"INSERT INTO {orders} (user_id, note) VALUES (1, 'after')")
    assert q.stats().pending == 0
    assert count(store, orders) == 0
    # The store is usable afterwards, also for transactions.
    with store.transaction() as tx:
        q.enqueue({"next": True}, tx=tx)
    assert q.stats().pending == 1


@pytest.mark.parametrize("stmt", ["COMMIT", "ROLLBACK"])
def test_a_raise_after_a_refused_commit_leaves_nothing_behind(
    store: alkstore.Store, target: Target, orders: str, stmt: str
) -> None:
    q = store.queue("q")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        with pytest.raises(alkstore.TransactionError):
            tx.execute(stmt)
        with pytest.raises(alkstore.TransactionError):
            q.enqueue({"after": True}, tx=tx)
        raise RuntimeError("the caller gives up")
    assert q.stats().pending == 0
    assert count(store, orders) == 0


@pytest.mark.parametrize("stmt", ["BEGIN", "begin transaction"])
def test_begin_inside_the_transaction_is_refused(store: alkstore.Store, orders: str, stmt: str) -> None:
    q = store.queue("q")
    with pytest.raises(alkstore.TransactionError), store.transaction() as tx:
        q.enqueue({"before": True}, tx=tx)
        with pytest.raises(alkstore.DatabaseError):
            tx.execute(stmt)
        with pytest.raises(alkstore.TransactionError):
            q.enqueue({"after": True}, tx=tx)
    assert q.stats().pending == 0
    assert count(store, orders) == 0


def test_other_thread_uses_store_during_tx(store: alkstore.Store) -> None:
    """Another thread is not refused (it may wait for the writer) and never sees uncommitted rows."""
    q = store.queue("q")
    results: dict[str, object] = {}
    errors: list[BaseException] = []
    committing = threading.Event()

    def other(job_id: int) -> None:
        try:
            got = q.get_job(job_id)
            results["read_before_commit"] = not committing.is_set()
            results["get"] = got
            results["own"] = q.enqueue({"from": "thread"})
        except BaseException as exc:
            errors.append(exc)

    with store.transaction() as tx:
        job_id = q.enqueue({"from": "tx"}, tx=tx)
        t = threading.Thread(target=other, args=(job_id,))
        t.start()
        t.join(0.3)
        committing.set()
    t.join(15)
    assert not t.is_alive()
    assert errors == []
    if results["read_before_commit"]:
        assert results["get"] is None
    assert isinstance(results["own"], int)
    assert q.stats().pending == 2


def test_other_thread_may_open_its_own_tx(store: alkstore.Store) -> None:
    q = store.queue("q")
    errors: list[BaseException] = []

    def other() -> None:
        try:
            with store.transaction() as tx2:
                q.enqueue({"t": 2}, tx=tx2)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=other)
    with store.transaction() as tx:
        q.enqueue({"t": 1}, tx=tx)
        t.start()
        t.join(0.2)  # it may wait for the writer; it must not be refused
    t.join(15)
    assert not t.is_alive()
    assert errors == []
    assert q.stats().pending == 2


def test_ops_that_must_land_at_once_take_no_tx(store: alkstore.Store) -> None:
    """Claims, heartbeats, release, sweeps and stats never run inside a caller's transaction."""
    q = store.queue("q")
    q.enqueue({})
    h = q.claim("w")
    assert h is not None
    with store.transaction() as tx:
        for call in (
            lambda: h.heartbeat(tx=tx),  # type: ignore[call-arg]
            lambda: h.release(tx=tx),  # type: ignore[call-arg]
            lambda: q.claim("w", tx=tx),  # type: ignore[call-arg]
            lambda: q.stats(tx=tx),  # type: ignore[call-arg]
            lambda: q.sweep_expired(tx=tx),  # type: ignore[call-arg]
        ):
            with pytest.raises(TypeError):
                call()
    assert h.ack()


def test_params_as_tuple(store: alkstore.Store, target: Target, orders: str) -> None:
    with store.transaction() as tx:
        assert (
            tx.execute(
                f"INSERT INTO {orders} (user_id, note) VALUES ({target.ph(1)}, {target.ph(2)})", (7, "t")
            )
            == 1
        )
        assert tx.query(f"SELECT note FROM {orders} WHERE user_id = {target.ph(1)}", (7,)) == [{"note": "t"}]
