"""Opening and closing a store (SPEC §2, §12, §13)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import alkstore
from tests.conftest import PG_URL, Target, drop_schema, new_schema_name, require_postgres

# --- accepted SQLite forms -------------------------------------------------


def _roundtrip(store: alkstore.Store) -> None:
    q = store.queue("q")
    job_id = q.enqueue({"k": 1})
    job = q.get_job(job_id)
    assert job is not None and job.payload == {"k": 1}


def test_open_path_str(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    with alkstore.open(str(path)) as store:
        assert store.engine == "sqlite"
        _roundtrip(store)
    assert path.exists()


def test_open_pathlike(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with alkstore.open(path) as store:
        assert store.engine == "sqlite"
        _roundtrip(store)
    assert path.exists()


def test_open_sqlite_url_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with alkstore.open("sqlite:///rel.db") as store:
        assert store.engine == "sqlite"
        _roundtrip(store)
    assert (tmp_path / "rel.db").exists()


def test_open_sqlite_url_absolute(tmp_path: Path) -> None:
    path = tmp_path / "abs.db"
    assert str(path).startswith("/")
    with alkstore.open(f"sqlite:///{path}") as store:  # four slashes in total
        assert store.engine == "sqlite"
        _roundtrip(store)
    assert path.exists()


# --- refused targets and options ---------------------------------------------


@pytest.mark.parametrize("spec", [":memory:", "sqlite:///:memory:"])
def test_memory_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="memory"):
        alkstore.open(spec)


@pytest.mark.parametrize("spec", ["mysql://u@h/db", "redis://localhost", "http://example.com/x.db"])
def test_unknown_scheme_names_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError) as err:
        alkstore.open(spec)
    msg = str(err.value)
    assert "postgresql://" in msg
    assert "sqlite:///" in msg


def test_unknown_option_is_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="bogus"):
        alkstore.open(tmp_path / "x.db", bogus=1)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("schema", "s1"),
        ("pool_size", 2),
        ("max_connections", 2),
        ("listen", False),
        ("listen_url", "postgresql://h/db"),
        ("statements", "unnamed"),
    ],
)
def test_pg_only_option_on_sqlite(tmp_path: Path, option: str, value: object) -> None:
    with pytest.raises(ValueError, match=option):
        alkstore.open(tmp_path / "x.db", **{option: value})  # type: ignore[call-overload]


@pytest.mark.parametrize(("option", "value"), [("busy_timeout_ms", 100), ("watch_interval_ms", 5)])
def test_sqlite_only_option_on_pg(option: str, value: object) -> None:
    require_postgres()
    schema = new_schema_name()
    try:
        with pytest.raises(ValueError, match=option):
            alkstore.open(PG_URL, schema=schema, **{option: value})  # type: ignore[call-overload]
    finally:
        drop_schema(schema)


def test_common_options_accepted(store_factory: Callable[..., alkstore.Store]) -> None:
    store = store_factory(poll_interval_s=0.5, max_payload_bytes=4096)
    _roundtrip(store)


# --- lifecycle ---------------------------------------------------------------


def test_engine_name(store: alkstore.Store, engine: str) -> None:
    assert store.engine == engine


def test_with_returns_store_and_closes(target: Target) -> None:
    opened = target.open()
    with opened as store:
        assert store is opened
        q = store.queue("q")
        q.enqueue({"a": 1})
    with pytest.raises(alkstore.StoreClosed):
        q.enqueue({"a": 2})


def test_close_is_idempotent(store: alkstore.Store) -> None:
    store.close()
    store.close()


def test_use_after_close(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue({"a": 1})
    job = q.claim("w")
    assert job is not None
    store.close()
    calls: list[Callable[[], object]] = [
        lambda: q.enqueue({"a": 2}),
        lambda: q.enqueue_many([{"a": 3}]),
        lambda: q.claim("w"),
        lambda: q.stats(),
        lambda: q.get_job(job.id),
        lambda: q.cancel(job.id),
        lambda: q.dead_jobs(),
        lambda: q.sweep_expired(),
        lambda: job.ack(),
        lambda: job.heartbeat(),
        lambda: store.transaction().__enter__(),
    ]
    for call in calls:
        with pytest.raises(alkstore.StoreClosed):
            call()


def test_reopen_sees_data(target: Target) -> None:
    with target.open() as store:
        q = store.queue("q")
        dead_id = q.enqueue({"dies": True})
        job = q.claim("w")
        assert job is not None and job.id == dead_id
        assert job.fail("boom")
        live_id = q.enqueue({"kept": True})
    with target.open() as store:
        q = store.queue("q")
        dead = q.get_job(dead_id)
        assert dead is not None and dead.state == "dead" and dead.last_error == "boom"
        live = q.get_job(live_id)
        assert live is not None and live.state == "pending"
        assert live.payload == {"kept": True}


def test_concurrent_first_open(target: Target) -> None:
    """Several handles creating the tables at once must all succeed (migrations are idempotent)."""
    stores: list[alkstore.Store] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def open_one() -> None:
        try:
            s = target.open()
        except BaseException as exc:
            with lock:
                errors.append(exc)
        else:
            with lock:
                stores.append(s)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        assert len(stores) == 4
        ids = [s.queue("q").enqueue({"i": i}) for i, s in enumerate(stores)]
        assert len(set(ids)) == 4
    finally:
        for s in stores:
            s.close()


# --- bad files and URLs -------------------------------------------------------


def test_not_a_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is a text file, not a database\n" * 200)
    with pytest.raises(alkstore.DatabaseError):
        alkstore.open(path)
    assert path.read_bytes().startswith(b"this is a text file")


def test_bad_pg_url_never_leaks_password() -> None:
    url = "postgresql://u:s3cret@127.0.0.1:1/x"
    with pytest.raises(alkstore.DatabaseError) as err:
        alkstore.open(url)
    seen = [str(err.value), repr(err.value), *map(str, err.value.args)]
    cause = err.value.__cause__ or err.value.__context__
    if cause is not None:
        seen += [str(cause), repr(cause)]
    for text in seen:
        assert "s3cret" not in text


def test_store_repr_never_leaks_password() -> None:
    """Under trust auth the password is never asked for, so the open succeeds."""
    require_postgres()
    if "@" not in PG_URL or ":" in PG_URL.split("://", 1)[1].split("@", 1)[0]:
        pytest.skip("ALKSTORE_TEST_DATABASE_URL is not of the form scheme://user@host/db")
    url = PG_URL.replace("@", ":s3cret@", 1)
    schema = new_schema_name()
    try:
        with alkstore.open(url, schema=schema) as store:
            assert "s3cret" not in repr(store)
            assert "s3cret" not in str(store)
    finally:
        drop_schema(schema)


def _texts(exc: BaseException) -> list[str]:
    """Every text an exception shows, its causes' included."""
    seen = [str(exc), repr(exc), *map(str, exc.args)]
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        seen += _texts(cause)
    return seen


@pytest.mark.parametrize(
    "query",
    [
        "password=s3cret",
        "PassWord=s3cret",
        "connect_timeout=2&password=s%33cret",
        "sslpassword=s3cret",
        "SSLPASSWORD=s3cret&password=s3cret",
    ],
)
def test_a_password_in_the_query_string_never_leaks_from_a_failed_open(query: str) -> None:
    url = f"postgresql://u@127.0.0.1:1/x?{query}"
    with pytest.raises(alkstore.DatabaseError) as err:
        alkstore.open(url)
    for text in _texts(err.value):
        assert "s3cret" not in text and "s%33cret" not in text, text
    assert "***" in str(err.value), "the message still names the URL, password masked"


def test_a_password_in_the_query_string_never_leaks_from_a_refused_target() -> None:
    with pytest.raises(ValueError) as err:
        alkstore.open("mysql://u@h/db?password=s3cret")
    for text in _texts(err.value):
        assert "s3cret" not in text, text


@pytest.mark.parametrize("query", ["password=s3cret", "connect_timeout=5&password=s%33cret"])
def test_store_repr_never_leaks_a_query_string_password(query: str) -> None:
    """Under trust auth the password is never asked for, so the open succeeds."""
    require_postgres()
    sep = "&" if "?" in PG_URL else "?"
    url = f"{PG_URL}{sep}{query}"
    schema = new_schema_name()
    try:
        with alkstore.open(url, schema=schema) as store:
            for text in (repr(store), str(store)):
                assert "s3cret" not in text and "s%33cret" not in text, text
                assert "password=***" in text.lower(), text
    finally:
        drop_schema(schema)


def test_pathlike_is_fspath(tmp_path: Path) -> None:
    """Any os.PathLike works, not only pathlib.Path."""

    class P:
        def __fspath__(self) -> str:
            return os.fspath(tmp_path / "p.db")

    with alkstore.open(P()) as store:
        _roundtrip(store)
    assert (tmp_path / "p.db").exists()
