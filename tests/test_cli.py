"""The command line (SPEC §11), run as a user would: `python -m alkstore ...` in a subprocess."""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import alkstore
from alkstore import Store
from tests.conftest import PG_URL, Target, drop_schema, new_schema_name, pg_admin_connect, require_postgres

HELPERS = Path(__file__).parent / "helpers"


def helpers_path() -> str:
    """PYTHONPATH for a child that imports the helper apps (and whatever alkstore we import)."""
    return os.pathsep.join(p for p in [str(HELPERS), os.environ.get("PYTHONPATH", "")] if p)


def cli(
    *args: str, cwd: str | os.PathLike[str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alkstore", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=dict(os.environ, PYTHONPATH=helpers_path()),
    )


def store_args(target: Target) -> list[str]:
    """The URL argument (plus --schema on Postgres) naming the test's store."""
    return [target.location] if target.schema is None else [target.location, "--schema", target.schema]


def assert_one_line_error(r: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("alkstore"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def json_out(r: subprocess.CompletedProcess[str]) -> Any:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# -- the commands ----------------------------------------------------------------


def test_stats_lists_every_queue_with_its_counts(target: Target, store: Store) -> None:
    store.queue("emails").enqueue_many([1, 2, 3])
    store.queue("reports").enqueue("later", delay=3600)
    dead = store.queue("zz-dead", max_attempts=1)
    dead.enqueue(None)
    job = dead.claim("w")
    assert job is not None and job.fail("boom")
    rows = json_out(cli("stats", *store_args(target), "--json"))
    assert [r["queue"] for r in rows] == ["emails", "reports", "zz-dead"]
    by_name = {r["queue"]: r for r in rows}
    assert by_name["emails"]["pending"] == 3 and by_name["emails"]["dead"] == 0
    assert by_name["reports"]["scheduled"] == 1 and by_name["reports"]["oldest_ready_age_s"] is None
    assert by_name["zz-dead"]["dead"] == 1
    table = cli("stats", *store_args(target))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    header = [
        "QUEUE",
        "PENDING",
        "WAITING",
        "SCHEDULED",
        "PROCESSING",
        "DEAD",
        "OLDEST",
        "READY",
        "S",
        "PAUSED",
        "LIMITS",
    ]
    assert lines[0].split() == header
    assert lines[1].split() == ["emails", "3", "0", "0", "0", "0", lines[1].split()[-3], "no", "-"]
    assert all(r["paused"] is False for r in rows)
    assert len(lines) == 4


def test_stats_on_an_empty_store_says_so(target: Target, store: Store) -> None:
    assert json_out(cli("stats", *store_args(target), "--json")) == []
    r = cli("stats", *store_args(target))
    assert r.returncode == 0 and "no queues" in r.stdout


def test_jobs_lists_live_jobs_newest_first_and_dead_ones_with_dead(target: Target, store: Store) -> None:
    q = store.queue("emails", max_attempts=1)
    first, second, third = q.enqueue_many([{"to": "a"}, {"to": "b"}, {"to": "c"}])
    claimed = q.claim("cli-worker")
    assert claimed is not None and claimed.id == first
    assert claimed.fail("mailbox full")
    live = json_out(cli("jobs", *store_args(target), "emails", "--json"))
    assert [j["id"] for j in live] == [third, second]
    assert live[0]["payload"] == {"to": "c"} and live[0]["state"] == "pending"
    assert live[0]["run_at"].endswith("+00:00")
    limited = json_out(cli("jobs", *store_args(target), "emails", "--json", "--limit", "1"))
    assert [j["id"] for j in limited] == [third]
    dead = json_out(cli("jobs", *store_args(target), "emails", "--dead", "--json"))
    assert [(j["id"], j["state"], j["last_error"]) for j in dead] == [(first, "dead", "mailbox full")]
    table = cli("jobs", *store_args(target), "emails", "--dead")
    assert table.returncode == 0 and "mailbox full" in table.stdout and "LAST ERROR" in table.stdout
    empty = cli("jobs", *store_args(target), "nothing-here")
    assert empty.returncode == 0 and "no live jobs" in empty.stdout


def test_jobs_shows_a_retried_or_released_job_without_a_lease(target: Target, store: Store) -> None:
    q = store.queue("emails", max_attempts=3)
    retried, released = q.enqueue_many([{"to": "a"}, {"to": "b"}])
    first, second = q.claim("cli-worker"), q.claim("cli-worker")
    assert first is not None and first.id == retried and first.retry("later", delay=60)
    assert second is not None and second.id == released and second.release()
    live = json_out(cli("jobs", *store_args(target), "emails", "--json"))
    assert [(j["id"], j["state"], j["worker_id"], j["deadline"]) for j in live] == [
        (released, "pending", None, None),
        (retried, "pending", None, None),
    ]
    assert all(j["claimed_at"] is not None for j in live)
    table = cli("jobs", *store_args(target), "emails")
    assert table.returncode == 0 and "cli-worker" not in table.stdout


def test_sweep_moves_expired_jobs_to_dead(target: Target, store: Store) -> None:
    q = store.queue("q")
    q.enqueue("stale", expires=0)
    q.enqueue("fresh")
    out = json_out(cli("sweep", *store_args(target), "q", "--json"))
    assert out == {"queue": "q", "expired": 1, "purged": 0}
    assert q.stats().dead == 1 and q.stats().pending == 1
    again = cli("sweep", *store_args(target), "q")
    assert again.returncode == 0 and "0 expired" in again.stdout


def test_schedules_lists_registered_schedules(target: Target, store: Store) -> None:
    store.schedule("nightly", "@every 1d", "maintenance", payload={"task": "sweep"})
    rows = json_out(cli("schedules", *store_args(target), "--json"))
    assert [(r["name"], r["spec"], r["queue"], r["payload"]) for r in rows] == [
        ("nightly", "@every 1d", "maintenance", {"task": "sweep"})
    ]
    assert rows[0]["next_fire_at"] is not None
    table = cli("schedules", *store_args(target))
    assert table.returncode == 0 and "nightly" in table.stdout and "@every 1d" in table.stdout


def test_schedules_show_the_next_three_fires_in_each_schedules_zone(target: Target, store: Store) -> None:
    store.schedule("standup", "0 9 * * MON-FRI", "team", tz="America/New_York")
    [row] = json_out(cli("schedules", *store_args(target), "--json"))
    assert row["tz"] == "America/New_York" and len(row["next_fires"]) == 3
    assert all("T09:00:00-0" in f for f in row["next_fires"]), row["next_fires"]
    table = cli("schedules", *store_args(target)).stdout
    assert "America/New_York" in table and row["next_fires"][0] in table


def test_demo_exits_0(tmp_path: Path) -> None:
    r = cli("demo", "--path", str(tmp_path / "demo.db"), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "Summary" in r.stdout


def test_worker_command_prints_status_lines_and_stops_on_sigint(target: Target, store: Store) -> None:
    store.queue("app").enqueue_many([{"sleep": 0}, {"sleep": 0}])
    env = dict(
        os.environ, APP_TARGET=target.location, APP_SCHEMA=target.schema or "", PYTHONPATH=helpers_path()
    )
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "alkstore",
            "worker",
            "worker_app:worker",
            "--concurrency",
            "1",
            "--status-every",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        try:
            assert proc.stderr is not None
            seen = []
            for line in proc.stderr:
                seen.append(line)
                if "2 acked" in line:
                    break
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    head = "".join(seen)
    assert proc.returncode == 0, head + err
    assert "queues app; concurrency 1" in head
    assert "alkstore worker app-worker: 2 acked, 0 retried, 0 dead" in head
    assert "stopped" in err and "Traceback" not in head + err
    assert out.count("done") == 2


# -- errors: one line, non-zero, no traceback --------------------------------------


#: The commands that change a queue: they too need a store that already exists.
OPERATIONS = [
    ["pause", "QUEUE"],
    ["resume", "QUEUE"],
    ["cancel", "QUEUE", "--id", "1"],
    ["requeue", "QUEUE", "--all"],
    ["requeue", "QUEUE", "--id", "1"],
    ["purge", "QUEUE", "--all"],
    ["purge", "QUEUE", "--older-than", "60"],
]


@pytest.mark.parametrize(
    "command", [["stats"], ["jobs", "QUEUE"], ["sweep", "QUEUE"], ["schedules"], ["dashboard"], *OPERATIONS]
)
def test_a_missing_sqlite_file_is_reported_and_not_created(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "typo.db"
    name, *rest = command
    assert_one_line_error(cli(name, str(missing), *rest), "no such file", str(missing))
    assert not missing.exists()
    url = f"sqlite:///{missing.name}"
    assert_one_line_error(cli(name, url, *rest, cwd=tmp_path), "no such file")
    assert not missing.exists()


COMMANDS = [
    ["stats"],
    ["jobs", "QUEUE"],
    ["jobs", "QUEUE", "--dead"],
    ["schedules"],
    ["sweep", "QUEUE"],
    ["dashboard"],
    *OPERATIONS,
]


@pytest.mark.parametrize("contents", ["app tables", "empty"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_sqlite_file_that_is_not_a_store_is_one_line_and_left_byte_identical(
    tmp_path: Path, command: list[str], contents: str
) -> None:
    """No alkstore tables appear, the journal mode stays: the command writes nothing."""
    path = tmp_path / "app.db"
    if contents == "empty":
        path.write_bytes(b"")
    else:
        conn = sqlite3.connect(path)
        with conn:
            conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
            conn.execute("INSERT INTO users (email) VALUES ('ada@example.com')")
        conn.close()
    before = path.read_bytes()
    name, *rest = command
    assert_one_line_error(cli(name, str(path), *rest), "not an alkstore store", str(path))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, no -shm
    if contents != "empty":
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")]
        finally:
            conn.close()
        assert tables == ["users"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_postgres_schema_without_a_store_is_one_line_and_not_created(command: list[str]) -> None:
    require_postgres()
    schema = new_schema_name()
    name, *rest = command
    try:
        assert_one_line_error(cli(name, PG_URL, *rest, "--schema", schema), "not an alkstore store", schema)
        with pg_admin_connect() as conn:
            row = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", [schema]).fetchone()
        assert row == (0,)
    finally:
        drop_schema(schema)


def test_a_pre_release_store_is_refused_by_a_read(target: Target, store: Store) -> None:
    store.queue("q").enqueue({})
    store.close()
    meta = "__alkstore_meta" if target.schema is None else f'"{target.schema}".meta'
    set_v2 = f"UPDATE {meta} SET value = '22' WHERE key = 'schema_version'"
    read_v = f"SELECT value FROM {meta} WHERE key = 'schema_version'"
    if target.schema is None:
        conn = sqlite3.connect(target.location)
        with conn:
            conn.execute(set_v2)
        conn.close()
    else:
        with pg_admin_connect() as pg:
            pg.execute(set_v2)
    assert_one_line_error(cli("stats", *store_args(target)), "schema version 22", "pre-release build")
    if target.schema is None:
        conn = sqlite3.connect(target.location)
        version = conn.execute(read_v).fetchone()
        conn.close()
    else:
        with pg_admin_connect() as pg:
            version = pg.execute(read_v).fetchone()
    assert version == ("22",)


def test_a_bad_url_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(cli("stats", "mysql://localhost/db"), "unsupported target", "postgresql://")
    assert_one_line_error(cli("stats", ":memory:"), ":memory:")
    assert_one_line_error(cli("stats", str(tmp_path)), "directory")


def test_a_file_that_is_not_sqlite_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, just some text " * 100)
    assert_one_line_error(cli("stats", str(junk)), "DatabaseError")


def test_an_unreachable_postgres_is_one_line_without_the_password() -> None:
    r = cli("stats", "postgresql://user:hunter2@127.0.0.1:1/db")
    assert_one_line_error(r, "127.0.0.1:1")
    assert "hunter2" not in r.stderr


def test_an_invalid_queue_name_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    alkstore.open(path).close()
    assert_one_line_error(cli("jobs", str(path), ""), "InvalidName")
    assert_one_line_error(cli("sweep", str(path), "__alkstore_x"), "InvalidName", "reserved")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("worker_app", "MODULE:ATTRIBUTE"),
        ("no_such_module_xyz:worker", "cannot import module 'no_such_module_xyz'"),
        ("worker_app:nope", "has no attribute 'nope'"),
        ("worker_app:not_a_worker", "not an alkstore.Worker"),
        ("broken_app:worker", "importing 'broken_app' failed: ZeroDivisionError"),
    ],
)
def test_a_bad_module_attr_is_one_line(tmp_path: Path, spec: str, fragment: str) -> None:
    (tmp_path / "broken_app.py").write_text("worker = 1 / 0\n")
    r = subprocess.run(
        [sys.executable, "-m", "alkstore", "worker", spec],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=helpers_path(), APP_TARGET=str(tmp_path / "app.db")),
    )
    assert_one_line_error(r, fragment)


def test_usage_errors_exit_2() -> None:
    r = cli("jobs", "x.db", "q", "--limit", "0")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = cli("frobnicate")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_version_prints_the_installed_version() -> None:
    r = cli("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"alkstore {importlib.metadata.version('alkstore')}\n"
    assert alkstore.__version__ == importlib.metadata.version("alkstore")


@pytest.mark.parametrize("port", ["99999", "65536", "0", "-1"])
def test_dashboard_refuses_a_port_out_of_range_before_anything_starts(tmp_path: Path, port: str) -> None:
    path = tmp_path / "s.db"
    alkstore.open(path).close()
    r = cli("dashboard", str(path), "--port", port)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stdout == "", "no banner"
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert errors == [f"alkstore dashboard: error: argument --port: expected a port 1-65535, got {port}"]


def test_dashboard_refuses_an_allowed_host_that_is_not_a_host(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    alkstore.open(path).close()
    r = cli("dashboard", str(path), "--allowed-host", "https://ops.example.com/")
    assert r.returncode == 2 and r.stdout == ""
    assert_one_line_error(r, "--allowed-host", "'https://ops.example.com/'")


def test_dashboard_on_a_port_in_use_is_one_line_and_prints_no_banner(target: Target, store: Store) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = cli("dashboard", *store_args(target), "--port", str(port))
    assert r.returncode == 2
    assert_one_line_error(r, f"cannot listen on 127.0.0.1:{port}", "in use")
    assert r.stdout == "", "the banner says the dashboard is up: it never was"


def test_outbox_queues_are_listed_and_readable_by_their_backing_name(target: Target, store: Store) -> None:
    webhooks = store.outbox("webhooks", max_attempts=1)
    webhooks.enqueue({"event": "a"})
    webhooks.enqueue({"event": "b"}, expires=0)
    rows = json_out(cli("stats", *store_args(target), "--json"))
    assert [(r["queue"], r["pending"]) for r in rows] == [("__alkstore_outbox:webhooks", 2)]
    live = json_out(cli("jobs", *store_args(target), "__alkstore_outbox:webhooks", "--json"))
    assert [j["payload"] for j in live] == [{"event": "b"}, {"event": "a"}]
    swept = json_out(cli("sweep", *store_args(target), "__alkstore_outbox:webhooks", "--json"))
    assert swept == {"queue": "__alkstore_outbox:webhooks", "expired": 1, "purged": 0}
    dead = json_out(cli("jobs", *store_args(target), "__alkstore_outbox:webhooks", "--dead", "--json"))
    assert [(j["payload"], j["last_error"]) for j in dead] == [({"event": "b"}, "expired")]
