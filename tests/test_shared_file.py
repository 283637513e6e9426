"""The application's own sqlite3 on the store's file loses nothing (SPEC §16).

alkstore bundles its own SQLite; Python's ``sqlite3`` (and SQLAlchemy and
Django on top of it) is a second copy of SQLite in the same process. These
tests put both on one file, with the real ``sqlite3`` module, and check the
four ways that used to lose data (issue 10) plus a two-process load: every
write transaction of either side excludes every other writer, a lock of
either side survives the other opening and closing connections, and nothing
committed is lost. The SQLAlchemy and Django variants are in
``test_shared_file_orms.py``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

import alkstore
from tests.conftest import Target
from tests.processes import read_line, spawn

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the protection is Linux-only (ADR 0009); elsewhere open() warns"
)

BIZ = "CREATE TABLE biz(id INTEGER PRIMARY KEY, note TEXT NOT NULL)"
HELPERS = Path(__file__).parent / "helpers"


@pytest.fixture
def engine() -> str:
    """Overrides the conftest's engine parameter: every test here is SQLite-only."""
    return "sqlite"


@contextmanager
def app_connection(path: str, timeout: float = 5.0) -> Iterator[sqlite3.Connection]:
    """The application's own connection: Python's sqlite3, explicit transactions."""
    with closing(sqlite3.connect(path, timeout=timeout, isolation_level=None)) as conn:
        yield conn


def peer(action: str, path: str, *args: str) -> str:
    """Runs a plain-sqlite3 process on the file and returns what it printed."""
    out = subprocess.run(
        [sys.executable, str(HELPERS / "sqlite_peer.py"), action, path, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip()


def scalar(path: str, sql: str) -> int:
    with app_connection(path) as conn:
        return int(conn.execute(sql).fetchone()[0])


def integrity(path: str) -> str:
    with app_connection(path) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def deleted_wal_open() -> list[str]:
    """Descriptors of this process on a deleted -wal file (a WAL someone unlinked under us)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith("-wal (deleted)"):
            found.append(target)
    return found


# -- scenario 1: alkstore holds the write lock -------------------------------


def test_app_write_is_refused_while_an_alkstore_transaction_holds_the_lock(target: Target) -> None:
    """The app's BEGIN IMMEDIATE inside alkstore's transaction times out; after it
    the app commits. 50 rounds: 50 jobs and 50 business rows, integrity ok."""
    path = target.location
    with target.open() as store, app_connection(path) as app:
        q = store.queue("q")
        app.execute(BIZ)
        for i in range(50):
            with store.transaction() as tx:
                q.enqueue({"i": i}, tx=tx)
                app.execute("PRAGMA busy_timeout = 20")
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    app.execute("BEGIN IMMEDIATE")
            app.execute("PRAGMA busy_timeout = 5000")
            app.execute("BEGIN IMMEDIATE")
            app.execute("INSERT INTO biz(note) VALUES (?)", (f"row {i}",))
            app.execute("COMMIT")
        assert q.stats().pending == 50
    assert scalar(path, "SELECT count(*) FROM biz") == 50
    assert scalar(path, "SELECT count(*) FROM __alkstore_jobs WHERE queue = 'q'") == 50
    assert integrity(path) == "ok"


def test_app_write_waits_for_the_alkstore_commit_then_lands(target: Target) -> None:
    """Within its busy timeout the app's write waits for alkstore's commit, then commits."""
    path = target.location
    with target.open() as store, app_connection(path) as setup:
        setup.execute(BIZ)
        q = store.queue("q")
        for i in range(10):
            done: list[str] = []

            def app_write(i: int = i, done: list[str] = done) -> None:
                with app_connection(path, timeout=10) as app:
                    app.execute("BEGIN IMMEDIATE")
                    app.execute("INSERT INTO biz(note) VALUES (?)", (f"row {i}",))
                    app.execute("COMMIT")
                done.append("committed")

            with store.transaction() as tx:
                q.enqueue({"i": i}, tx=tx)
                writer = threading.Thread(target=app_write)
                writer.start()
                time.sleep(0.1)
                assert not done, "the app's write landed while alkstore held the write lock"
            writer.join(10)
            assert done == ["committed"]
        assert q.stats().pending == 10
    assert scalar(path, "SELECT count(*) FROM biz") == 10
    assert integrity(path) == "ok"


# -- scenario 2: the application holds the write lock ------------------------


def test_enqueue_is_busy_while_the_app_holds_the_write_lock(target: Target) -> None:
    """enqueue() cannot slip in under the app's BEGIN IMMEDIATE: past its busy
    timeout it raises SQLITE_BUSY and writes nothing; the app's row commits."""
    path = target.location
    with target.open(busy_timeout_ms=100) as store, app_connection(path) as app:
        q = store.queue("q")
        app.execute(BIZ)
        app.execute("BEGIN IMMEDIATE")
        app.execute("INSERT INTO biz(note) VALUES ('app')")
        with pytest.raises(alkstore.DatabaseError) as err:
            q.enqueue({"lost": "never"})
        assert (err.value.code or "").startswith("SQLITE_BUSY")
        app.execute("COMMIT")
        job_id = q.enqueue({"after": "commit"})
        assert q.get_job(job_id) is not None
        assert q.stats().pending == 1
    assert scalar(path, "SELECT count(*) FROM biz") == 1


def test_enqueue_waits_for_the_app_commit_and_both_land(target: Target) -> None:
    path = target.location
    with target.open() as store, app_connection(path) as app:
        q = store.queue("q")
        app.execute(BIZ)
        for i in range(10):
            ids: list[int] = []
            app.execute("BEGIN IMMEDIATE")
            app.execute("INSERT INTO biz(note) VALUES (?)", (f"row {i}",))
            enqueuer = threading.Thread(target=lambda ids=ids, i=i: ids.append(q.enqueue({"i": i})))
            enqueuer.start()
            time.sleep(0.1)
            assert not ids, "enqueue returned while the app held the write lock"
            app.execute("COMMIT")
            enqueuer.join(10)
            assert len(ids) == 1 and q.get_job(ids[0]) is not None
        assert q.stats().pending == 10
    assert scalar(path, "SELECT count(*) FROM biz") == 10
    assert scalar(path, "SELECT count(*) FROM __alkstore_jobs WHERE queue = 'q'") == 10
    assert integrity(path) == "ok"


# -- scenario 3: a lock survives the other side opening and closing ----------


def test_alkstore_lock_survives_the_app_opening_and_closing_connections(target: Target) -> None:
    path = target.location
    with target.open() as store:
        q = store.queue("q")
        with store.transaction() as tx:
            q.enqueue({"held": True}, tx=tx)
            for _ in range(3):
                with app_connection(path) as app:
                    app.execute("SELECT count(*) FROM sqlite_schema").fetchone()
            assert peer("try-write", path) == "busy", "another process took the write lock"
        assert peer("try-write", path) == "ok"
        assert q.stats().pending == 1


def test_app_lock_survives_alkstore_opening_and_closing_stores(target: Target) -> None:
    path = target.location
    first = target.open()
    with app_connection(path) as app:
        app.execute(BIZ)
        app.execute("BEGIN IMMEDIATE")
        app.execute("INSERT INTO biz(note) VALUES ('app')")
        for _ in range(3):
            other = target.open()
            other.queue("q").stats()
            other.close()
        first.close()
        time.sleep(0.1)  # the wake watchers close their connections on their own threads
        assert peer("try-write", path) == "busy", "another process took the write lock"
        app.execute("COMMIT")
        assert peer("try-write", path) == "ok"
    assert scalar(path, "SELECT count(*) FROM biz") == 1


# -- scenario 4: nobody deletes the WAL under alkstore ------------------------


def test_the_wal_stays_while_alkstore_has_it_open(target: Target) -> None:
    """The app opens, reads and closes; another process's close, the last one as
    the kernel sees it, would checkpoint and delete the WAL. alkstore's later
    commits must stay visible to other processes."""
    path = target.location
    with target.open() as store:
        q = store.queue("q")
        q.enqueue({"i": -1})
        with app_connection(path) as app:
            app.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        assert peer("touch", path) == "done"
        ids = [q.enqueue({"i": i}) for i in range(20)]
        assert deleted_wal_open() == []
        seen = peer("count", path, "SELECT count(*) FROM __alkstore_jobs WHERE queue = 'q'")
        assert int(seen) == 21
        assert all(q.get_job(i) is not None for i in ids)


def test_jobs_enqueued_after_the_app_closed_survive_a_crash(target: Target) -> None:
    path = target.location
    with target.open():
        pass  # creates the file
    with spawn("crash_after_enqueue.py", path, "q", "20") as proc:
        assert read_line(proc) == "ready"
        assert peer("touch", path) == "done"
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        ids = [int(x) for x in read_line(proc).split()]
        assert proc.wait(30) == 0
    assert len(ids) == 20
    with target.open() as store:
        q = store.queue("q")
        assert all(q.get_job(i) is not None for i in ids)
        assert q.stats().pending == 21
    assert integrity(path) == "ok"


def test_closed_stores_leave_no_lock_behind(target: Target) -> None:
    """Once alkstore's stores are closed, the app's last connection is the last user
    of the file: its close checkpoints and removes the WAL, as SQLite does alone."""
    path = target.location
    with app_connection(path) as app:
        with target.open() as store:
            store.queue("q").enqueue({})
        time.sleep(0.1)  # the wake watcher closes its connection on its own thread
        app.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    assert not os.path.exists(path + "-wal")
    assert scalar(path, "SELECT count(*) FROM __alkstore_jobs") == 1


# -- descriptors: kept while the app may hold locks, never without bound -----


def descriptors_on(path: str) -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == path:
                count += 1
        except OSError:
            continue
    return count


def settled_descriptors_on(path: str) -> int:
    """The count once the wake watchers of closed stores have let go."""
    deadline = time.monotonic() + 5
    last = descriptors_on(path)
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = descriptors_on(path)
        if now == last:
            return now
        last = now
    return last


def test_descriptors_kept_for_the_app_are_bounded_and_released_after(target: Target) -> None:
    path = os.path.realpath(target.location)
    with target.open():
        pass
    assert settled_descriptors_on(path) == 0
    with app_connection(path) as app:
        app.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        counts = []
        for _ in range(20):
            store = alkstore.open(path)
            store.queue("q").enqueue({})
            store.close()
            counts.append(settled_descriptors_on(path))
        # The app's own descriptor, plus alkstore's kept ones: no growth.
        assert max(counts) == counts[0], counts
        assert counts[0] <= 6, counts
    # The app let go: the next store close releases everything of alkstore's.
    with alkstore.open(path):
        pass
    assert settled_descriptors_on(path) == 0


# -- two processes, each with both copies, for 20 seconds --------------------


@pytest.mark.slow
def test_two_processes_sharing_the_file_lose_nothing(target: Target, tmp_path: Path) -> None:
    path = target.location
    with target.open(), app_connection(path) as app:
        app.execute(BIZ)
    seconds = "20"
    outs = [tmp_path / f"out-{tag}.json" for tag in ("a", "b")]
    procs = [
        subprocess.Popen(
            [sys.executable, str(HELPERS / "shared_file_load.py"), path, tag, seconds, str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag, out in zip(("a", "b"), outs, strict=True)
    ]
    for p in procs:
        _, err = p.communicate(timeout=90)
        assert p.returncode == 0, err
    results = [json.loads(out.read_text()) for out in outs]
    for r in results:
        assert r["errors"] == []
    enqueued = [i for r in results for i in r["enqueued"]]
    acked = [i for r in results for i in r["acked"]]
    notes = [n for r in results for n in r["notes"]]
    with app_connection(path) as app:
        remaining = [row[0] for row in app.execute("SELECT id FROM __alkstore_jobs WHERE queue = 'load'")]
        stored_notes = [row[0] for row in app.execute("SELECT note FROM biz")]
    assert len(set(acked)) == len(acked), "a job was acked twice"
    assert set(acked) <= set(enqueued)
    assert set(enqueued) == set(acked) | set(remaining), "a committed job vanished"
    assert sorted(stored_notes) == sorted(notes), "a committed business row vanished (or appeared)"
    assert integrity(path) == "ok"
    print(
        f"\n{len(enqueued)} jobs enqueued, {len(acked)} acked, {len(notes)} business rows, all accounted for"
    )
    assert len(enqueued) > 1000 and len(notes) > 1000, "too little load to prove anything"


# -- where the protection cannot hold, open() says so ------------------------


def test_open_warns_when_the_protection_is_off(target: Target) -> None:
    """With the routing switched off (the knob exists to measure its cost), open()
    warns instead of leaving a silent risk."""
    code = (
        "import warnings, alkstore, sys\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    alkstore.open(sys.argv[1]).close()\n"
        "print(len(w), w[0].category.__name__ if w else '', str(w[0].message) if w else '')\n"
    )
    env = dict(os.environ, ALKSTORE_SQLITE_LOCKS="posix")
    out = subprocess.run(
        [sys.executable, "-c", code, target.location], env=env, capture_output=True, text=True, check=True
    )
    count, category, message = out.stdout.strip().split(" ", 2)
    assert (count, category) == ("1", "SharedFileWarning"), out.stdout
    assert "sqlite3" in message


def test_open_does_not_warn_where_the_protection_holds(target: Target) -> None:
    # pytest turns warnings into errors (pyproject), so a warning would fail here.
    with target.open() as store:
        store.queue("q").enqueue({})
