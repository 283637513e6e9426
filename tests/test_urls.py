"""What a target string may say and what alkstore shows of it (SPEC §2, §12):
passwords masked where the driver reads them, alkstore's options in a
Postgres URL's query string, and the targets refused because they would
silently mean something else (a libpq key-value string, a SQLite `file:` URI).

Redaction rules are unit-tested in crates/alkstore-core/src/open/redact.rs; these
tests show them through every Python surface: `repr(store)`, an `open()` error
and a command-line error line.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

import alkstore
from tests.conftest import PG_URL, drop_schema, new_schema_name, pg_admin_connect, require_postgres

SECRET = "s3cret"

# URLs whose password (always containing SECRET) the driver reads, though it holds
# characters that end a URL's host part elsewhere, or sits where a naive reader
# stops looking. `{hp}` is a host:port; the store is never reached through them.
TRICKY = [
    "postgresql://u:pw#s3cret@{hp}/db",
    "postgresql://u:pw/s3cret@{hp}/db",
    "postgresql://u:pw?s3cret@{hp}/db",
    "postgresql://u:pw#/?s3cret@{hp}/db",
    "postgresql://u:p%40s3cret%2F@{hp}/db",
    "postgresql://u:p@s3cret@{hp}/db",
    "postgresql://u:s3c:ret:s3cret@{hp}/db",
    "postgresql://u:s3cret@{hp},127.0.0.1:2/db",
    "postgres://u:s3cret@{hp}/db?connect_timeout=2",
    "postgresql://u@{hp}/db?password=pw#s3cret",
    "postgresql://u@{hp}/db?connect_timeout=2&password=s3cret&application_name=x",
    "postgresql://u@{hp}/db?password=pw%23s3cret",
    "postgresql://u:%E2%98%83s3cret@{hp}/db",
]


def _texts(exc: BaseException) -> list[str]:
    """Every text an exception shows, its causes' included."""
    seen = [str(exc), repr(exc), *map(str, exc.args)]
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        seen += _texts(cause)
    return seen


def _no_secret(text: str) -> None:
    for form in (SECRET, quote(SECRET), "s%33cret", "ret:s3c"):
        assert form not in text, text


# --- redaction --------------------------------------------------------------


@pytest.mark.parametrize("url", TRICKY)
def test_a_failed_open_never_shows_the_password(url: str) -> None:
    with pytest.raises(alkstore.DatabaseError) as err:
        alkstore.open(url.format(hp="127.0.0.1:1"))
    for text in _texts(err.value):
        _no_secret(text)
    assert "***" in str(err.value), "the message still names the URL, its password masked"


@pytest.mark.parametrize("url", ["postgresql://u:s3cret@[::1]:1/db", "postgresql://u:pw#s3cret@[::1]:1/db"])
def test_an_ipv6_host_is_kept_and_the_password_masked(url: str) -> None:
    with pytest.raises(alkstore.DatabaseError) as err:
        alkstore.open(url)
    for text in _texts(err.value):
        _no_secret(text)
    assert "postgresql://u:***@[::1]:1/db" in str(err.value)


@pytest.mark.parametrize("password", ["o", "t", "e", "n"])
def test_a_short_password_masks_its_field_only(password: str) -> None:
    """Only the URL's password field is masked, never the same letters elsewhere
    in the message (which would spell the password out around the masks)."""
    with pytest.raises(alkstore.ConnectionLost) as err:
        alkstore.open(f"postgresql://u:{password}@127.0.0.1:1/db")
    text = str(err.value)
    shown = "postgresql://u:***@127.0.0.1:1/db"
    assert text.startswith(f"connection lost: could not open Postgres store at {shown}: "), text
    assert text.count("***") == 1, text
    assert "onnection refused" in text, text


def test_repr_of_a_store_masks_tricky_passwords() -> None:
    """Under trust auth the password is never asked for, so each open succeeds."""
    require_postgres()
    if "@" not in PG_URL or ":" in PG_URL.split("://", 1)[1].split("@", 1)[0] or "?" in PG_URL:
        pytest.skip("ALKSTORE_TEST_DATABASE_URL is not of the form scheme://user@host/db")
    user, rest = PG_URL.split("://", 1)[1].split("@", 1)
    hostport = rest.split("/", 1)[0]
    dbname = rest.split("/", 1)[1]
    schema = new_schema_name()
    urls = [
        f"postgresql://{user}:pw#s3cret@{hostport}/{dbname}",
        f"postgresql://{user}:pw/s3cret@{hostport}/{dbname}",
        f"postgresql://{user}:pw?s3cret@{hostport}/{dbname}",
        f"postgresql://{user}:p%40s3cret@{hostport}/{dbname}",
        f"postgresql://{user}@{hostport}/{dbname}?password=pw#s3cret",
        f"postgresql://{user}@{hostport}/{dbname}?connect_timeout=5&password=s3cret",
    ]
    try:
        for url in urls:
            with alkstore.open(url, schema=schema) as store:
                for text in (repr(store), str(store)):
                    _no_secret(text)
                    assert "***" in text and hostport in text, text
    finally:
        drop_schema(schema)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:pw#s3cret@127.0.0.1:1/db",
        "postgresql://u:pw/s3cret@127.0.0.1:1/db",
        "postgresql://u@127.0.0.1:1/db?password=pw#s3cret",
    ],
)
def test_a_command_line_error_never_shows_the_password(url: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "alkstore", "stats", url], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("alkstore: error: ") and "***" in r.stderr, r.stderr
    _no_secret(r.stderr + r.stdout)


def test_a_listen_url_in_the_url_is_masked_too() -> None:
    inner = "postgresql://u:s3cret@127.0.0.1:1/db"
    url = f"postgresql://u@127.0.0.1:1/db?listen_url={quote(inner, safe='')}"
    with pytest.raises(alkstore.DatabaseError) as err:
        alkstore.open(url)
    for text in _texts(err.value):
        _no_secret(text)


# --- alkstore's options in the URL --------------------------------------------


def _with(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


def test_open_takes_its_options_from_the_url(caplog: pytest.LogCaptureFixture) -> None:
    require_postgres()
    schema = new_schema_name()
    try:
        url = _with(PG_URL, f"schema={schema}&statements=unnamed&max_connections=2&poll_interval_s=0.5")
        with caplog.at_level(logging.WARNING, logger="alkstore"):
            store = alkstore.open(url)
        with store:
            store.queue("q").enqueue({"n": 1})
            # statements=unnamed without listen_url: the store says once that it polls.
            notes = [r.getMessage() for r in caplog.records if r.name == "alkstore"]
            assert len(notes) == 1 and "poll every 0.5 s" in notes[0], notes
            # The options leave the URL shown; the engine never saw them as driver parameters.
            assert f"schema={schema}" in repr(store)
        with pg_admin_connect() as conn:
            row = conn.execute(f'SELECT count(*) FROM "{schema}".jobs').fetchone()
        assert row is not None and row[0] == 1
        # listen=false in the URL silences the note.
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="alkstore"):
            alkstore.open(_with(url, "listen=false")).close()
        assert [r for r in caplog.records if r.name == "alkstore"] == []
    finally:
        drop_schema(schema)


def test_an_option_in_the_url_and_as_a_keyword_must_agree() -> None:
    require_postgres()
    schema = new_schema_name()
    try:
        url = _with(PG_URL, f"schema={schema}&statements=unnamed&listen=false")
        # The same value twice is no conflict.
        alkstore.open(url, schema=schema, statements="unnamed").close()
        with pytest.raises(ValueError, match="statements") as err:
            alkstore.open(url, statements="named")
        assert "URL" in str(err.value) and "argument" in str(err.value)
        with pytest.raises(ValueError, match="schema"):
            alkstore.open(url, schema="other")
    finally:
        drop_schema(schema)


@pytest.mark.parametrize(
    ("query", "error", "fragment"),
    [
        ("statements=bogus", ValueError, "statements"),
        ("max_connections=abc", ValueError, "max_connections"),
        ("max_connections=0", ValueError, "max_connections"),
        ("listen=maybe", ValueError, "listen"),
        ("poll_interval_s=-1", ValueError, "poll_interval_s"),
        ("busy_timeout_ms=5", ValueError, "SQLite only"),
        ("statements=named&statements=unnamed", ValueError, "more than once"),
        ("_must_exist=true", alkstore.DatabaseError, "_must_exist"),
    ],
)
def test_a_bad_option_in_the_url_is_refused_before_connecting(
    query: str, error: type[Exception], fragment: str
) -> None:
    # Port 1: nothing answers there, so the refusal came before any connection.
    with pytest.raises(error) as err:
        alkstore.open(f"postgresql://u:s3cret@127.0.0.1:1/db?{query}")
    assert fragment in str(err.value), str(err.value)
    for text in _texts(err.value):
        _no_secret(text)


def test_the_command_line_takes_options_from_the_url(tmp_path: Path) -> None:
    require_postgres()
    schema = new_schema_name()
    try:
        with alkstore.open(PG_URL, schema=schema) as store:
            store.queue("q").enqueue({"n": 1})
        url = _with(PG_URL, f"schema={schema}&statements=unnamed&listen=false")
        argv = [sys.executable, "-m", "alkstore", "stats", url, "--json"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert '"q"' in r.stdout
        r = subprocess.run([*argv, "--schema", "other"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "schema" in r.stderr and "URL" in r.stderr, r.stderr
    finally:
        drop_schema(schema)


# --- targets that would silently mean something else ---------------------------


@pytest.mark.parametrize(
    "target",
    [
        "host=127.0.0.1 dbname=test user=postgres password=s3cret",
        "dbname=test password=s3cret",
        "  host=localhost port=5432",
        "password=s3cret host=/var/run/postgresql",
        "service=prod",
        "user=app sslmode=require dbname=x",
    ],
)
def test_a_libpq_key_value_string_is_refused(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="postgresql://") as err:
        alkstore.open(target)
    assert "key=value" in str(err.value)
    for text in _texts(err.value):
        _no_secret(text)
    assert os.listdir(tmp_path) == [], "no SQLite file was made"
    r = subprocess.run(
        [sys.executable, "-m", "alkstore", "stats", target], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 1 and "key=value" in r.stderr, r.stderr
    _no_secret(r.stderr)


def test_a_file_name_with_an_equals_sign_is_still_a_file(tmp_path: Path) -> None:
    path = tmp_path / "run=1.db"
    with alkstore.open(str(path)) as store:
        store.queue("q").enqueue({"n": 1})
    assert path.exists()


@pytest.mark.parametrize(
    "target",
    [
        "file:app.db",
        "file:app.db?mode=ro",
        "file::memory:",
        "file:app.db?mode=memory&cache=shared",
        "sqlite:///file:app.db",
    ],
)
def test_a_sqlite_uri_filename_is_refused(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite would read `file:` as a URI (mode=ro, an in-memory database, another
    VFS) while alkstore keeps its lock and WAL files beside the literal name."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="file:") as err:
        alkstore.open(target)
    assert "path" in str(err.value)
    assert os.listdir(tmp_path) == []


def test_a_relative_path_starting_with_file_colon_still_opens(tmp_path: Path) -> None:
    (tmp_path / "file:x").mkdir()
    with alkstore.open(str(tmp_path / "file:x" / "app.db")) as store:
        store.queue("q").enqueue({"n": 1})
