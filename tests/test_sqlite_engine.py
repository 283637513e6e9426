"""SQLite-only checks: pragmas, table names, bad files (SPEC §2, §13).

These look at the file itself, which only SQLite has; the behavioural
contract is covered for both engines elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

import pytest

import alkstore
from tests.conftest import Target
from tests.processes import read_line, spawn

MIB = 1 << 20


@pytest.fixture
def engine() -> str:
    """Overrides the conftest's engine parameter: every test here is SQLite-only."""
    return "sqlite"


def pragma(store: alkstore.Store, name: str) -> object:
    with store.transaction() as tx:
        rows = tx.query(f"PRAGMA {name}")
    assert len(rows) == 1
    return next(iter(rows[0].values()))


def test_pragmas(store: alkstore.Store) -> None:
    assert pragma(store, "journal_mode") == "wal"
    assert pragma(store, "synchronous") == 1  # NORMAL
    assert pragma(store, "foreign_keys") == 1
    assert pragma(store, "busy_timeout") == 5000


def test_busy_timeout_option(target: Target) -> None:
    with target.open(busy_timeout_ms=1234) as store:
        assert pragma(store, "busy_timeout") == 1234


def test_engine_tables_are_prefixed(store: alkstore.Store, target: Target) -> None:
    store.queue("a").enqueue({})
    store.queue("b").enqueue({})
    with sqlite3.connect(target.location) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    conn.close()
    ours = [n for n in names if not n.startswith("sqlite_")]
    assert ours, names
    assert all(n.startswith("__alkstore") for n in ours), ours


def test_file_is_readable_by_plain_sqlite(store: alkstore.Store, target: Target) -> None:
    """The file is an ordinary WAL database other tools can read while the store is open."""
    store.queue("q").enqueue({"x": 1})
    conn = sqlite3.connect(target.location)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_garbled_header_is_database_error(target: Target) -> None:
    with target.open() as store:
        store.queue("q").enqueue({})
    with open(target.location, "r+b") as f:
        f.write(b"\x00garbage, not SQLite\x00" * 5)
    with pytest.raises(alkstore.DatabaseError):
        target.open()


def test_truncated_file_is_database_error(tmp_path: Path) -> None:
    path = tmp_path / "short.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 50)
    with pytest.raises(alkstore.DatabaseError):
        alkstore.open(path)


def test_newer_schema_version_refused(target: Target) -> None:
    with target.open() as store:
        store.queue("q").enqueue({})
    conn = sqlite3.connect(target.location)
    try:
        with conn:
            n = conn.execute(
                "UPDATE __alkstore_meta SET value = '999999' WHERE key = 'schema_version'"
            ).rowcount
    finally:
        conn.close()
    assert n == 1, "ADR 0001: __alkstore_meta holds the schema_version row"
    with pytest.raises(alkstore.DatabaseError, match=r"(?i)newer|version"):
        target.open()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_file_is_database_error(target: Target) -> None:
    with target.open() as store:
        store.queue("q").enqueue({})
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(target.location + suffix):
            os.chmod(target.location + suffix, 0o444)
    os.chmod(os.path.dirname(target.location), 0o555)
    try:
        with pytest.raises(alkstore.DatabaseError):
            target.open()
    finally:
        os.chmod(os.path.dirname(target.location), 0o755)


def test_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with alkstore.open(path) as store:
        q = store.queue("q")
        job_id = q.enqueue({})
        assert q.get_job(job_id) is not None


def test_must_exist_creates_nothing_and_reads_a_store(tmp_path: Path, target: Target) -> None:
    """The private `_must_exist` open (the CLI's inspection commands) never creates a file."""
    missing = tmp_path / "missing.db"
    with pytest.raises(alkstore.DatabaseError):
        alkstore.open(missing, _must_exist=True)  # type: ignore[call-overload]  # private: not in the stub
    assert not missing.exists()
    with target.open() as store:
        job_id = store.queue("q").enqueue({"k": 1})
    with target.open(_must_exist=True) as store:
        job = store.queue("q").get_job(job_id)
        assert job is not None and job.payload == {"k": 1}


# --- the WAL stays bounded under sustained load (SPEC §20) -----------------------

WAL_BOUND = 32 * MIB
CHURN_PROCS = 4
CHURN_JOBS = 10000  # per process


@pytest.mark.slow
def test_the_wal_stays_bounded_under_sustained_multi_process_load(target: Target) -> None:
    """Four processes churn 20k jobs with always-active readers; the WAL never passes the bound.

    A size bound, not a timing: a faster machine writes the same frames sooner.
    Without checkpoints that can reset it, the WAL only grows (about 3.5 KiB per job).
    """
    path = target.location
    alkstore.open(path).close()
    wal = Path(path + "-wal")
    with contextlib.ExitStack() as stack:
        procs = [stack.enter_context(spawn("churner.py", path, str(CHURN_JOBS))) for _ in range(CHURN_PROCS)]
        for p in procs:
            assert read_line(p) == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        largest = 0
        while any(p.poll() is None for p in procs):
            with contextlib.suppress(FileNotFoundError):
                largest = max(largest, wal.stat().st_size)
            time.sleep(0.01)
        for p in procs:
            assert read_line(p) == f"done {CHURN_JOBS}"
    assert largest < WAL_BOUND, f"the WAL reached {largest / MIB:.1f} MiB"
    with alkstore.open(path) as store:
        stats = store.queue("churn").stats()
        assert (stats.pending, stats.processing) == (0, 0)


def test_close_removes_the_wal_even_while_the_wake_watcher_sleeps(tmp_path: Path) -> None:
    """The watcher's read-only connection is closed by `close`, first: left to the
    sleeping watcher thread it would often be the last one open, and a read-only
    connection cannot checkpoint and remove the WAL."""
    for i in range(5):
        path = tmp_path / f"w{i}.db"
        store = alkstore.open(str(path))
        q = store.queue("q")
        assert q.claim("w", timeout=0.3) is None  # starts the watcher; it then sleeps
        q.enqueue({"n": 1})
        store.close()
        wal = tmp_path / f"w{i}.db-wal"
        assert not wal.exists() or wal.stat().st_size == 0, f"{wal.stat().st_size} bytes left"
