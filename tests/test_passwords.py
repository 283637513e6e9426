"""Keeping the database password off the command line (SPEC §11, §12): the
command line takes its store from ``ALKSTORE_URL``, and a Postgres URL without a
password gets one from ``PGPASSWORD`` or a libpq password file (``PGPASSFILE``,
else ``~/.pgpass``), by libpq's rules.

The password tests need a server that asks for one: the shared test server
trusts 127.0.0.1, so a private one is made with ``initdb`` (tests/private_pg.py).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

import alkstore
from tests.conftest import PG_URL, drop_schema, new_schema_name, require_postgres
from tests.private_pg import PrivatePostgres, have_initdb
from tests.test_cli import HELPERS, helpers_path

# A ':' and a '\' that a password file escapes, a '#' that ends a naive URL reader's host.
APP_PW = "pa:ss\\wo#rd"
PASSFILE_PW = APP_PW.replace("\\", "\\\\").replace(":", "\\:")


def _cli(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alkstore", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env, "PYTHONPATH": helpers_path()},
        cwd=HELPERS,
    )


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without any Postgres password or store URL, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "PGPASSFILE", "ALKSTORE_URL")}
    env.update(extra)
    return env


# --- ALKSTORE_URL ---------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A SQLite store with one pending and one dead job in queue "q"; (path, dead job id)."""
    path = str(tmp_path / "app.db")
    with alkstore.open(path) as store:
        q = store.queue("q", max_attempts=1)
        q.enqueue({"n": 1})
        q.enqueue({"n": 2})
        job = q.claim("w")
        assert job is not None
        job.fail("boom")
        dead_id = job.id
    yield path, dead_id


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["jobs", "q"],
        ["jobs", "--dead", "q"],
        ["jobs", "q", "--limit", "5", "--json"],
        ["result", "{id}"],
        ["job", "{id}"],
        ["sweep", "q"],
        ["schedules"],
        ["pause", "q"],
        ["resume", "q"],
        ["limits", "q"],
        ["cancel", "q", "--id", "999"],
        ["requeue", "q", "--all"],
        ["purge", "q", "--all"],
        ["forget", "never-used"],
    ],
)
def test_every_command_takes_its_store_from_alkstore_url(
    sqlite_store: tuple[str, int], args: list[str]
) -> None:
    path, dead_id = sqlite_store
    argv = [a.replace("{id}", str(dead_id)) for a in args]
    r = _cli(*argv, env=_env(ALKSTORE_URL=path))
    assert r.returncode == 0, r.stderr
    # The same command with the URL as its first word does the same.
    with_url = _cli(argv[0], path, *argv[1:], env=_env())
    assert with_url.returncode == 0, with_url.stderr


def test_a_url_given_on_the_command_line_wins_over_alkstore_url(
    sqlite_store: tuple[str, int], tmp_path: Path
) -> None:
    path, _ = sqlite_store
    missing = str(tmp_path / "missing.db")
    r = _cli("jobs", path, "q", "--json", env=_env(ALKSTORE_URL=missing))
    assert r.returncode == 0, r.stderr
    # And options may sit between the URL and the queue, as before.
    r = _cli("jobs", path, "--dead", "q", env=_env(ALKSTORE_URL=missing))
    assert r.returncode == 0, r.stderr
    r = _cli("stats", env=_env(ALKSTORE_URL=missing))
    assert r.returncode == 1 and "no such file" in r.stderr, r.stderr


def test_without_a_url_or_alkstore_url_the_usage_error_names_both(tmp_path: Path) -> None:
    r = _cli("jobs", "q", env=_env())
    assert r.returncode == 2, r.stderr
    assert "ALKSTORE_URL" in r.stderr, r.stderr


def test_the_dashboard_takes_its_store_from_alkstore_url(sqlite_store: tuple[str, int]) -> None:
    pytest.importorskip("uvicorn")
    path, _ = sqlite_store
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "alkstore", "dashboard", "--port", str(port)]
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(ALKSTORE_URL=path)
    ) as proc:
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()
            assert f"http://127.0.0.1:{port}/" in banner, proc.stderr.read() if proc.stderr else ""
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=30)


def test_a_worker_started_from_alkstore_url_shows_no_password_in_its_command_line() -> None:
    """`ps` shows every user each process's argv (/proc/PID/cmdline); the store URL and
    its password stay in the environment, which only the process's owner can read."""
    require_postgres()
    if "@" not in PG_URL or ":" in PG_URL.split("://", 1)[1].split("@", 1)[0]:
        pytest.skip("ALKSTORE_TEST_DATABASE_URL is not of the form scheme://user@host/db")
    secret = "hunter2-in-ps"
    url = PG_URL.replace("@", f":{secret}@", 1)  # the shared server trusts 127.0.0.1: any password does
    schema = new_schema_name()
    try:
        with alkstore.open(PG_URL, schema=schema) as store:
            job_id = (
                alkstore.Tasks(store).task(queue="app", name="tasks_app.shout")(lambda t: t).enqueue("hi")
            )
            argv = [sys.executable, "-m", "alkstore", "worker", "--tasks", "tasks_app:tasks"]
            argv += ["--schema", schema, "--queues", "app", "--no-schedules"]
            env = {**_env(ALKSTORE_URL=url), "PYTHONPATH": helpers_path()}
            with subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=HELPERS
            ) as proc:
                try:
                    assert proc.stdout is not None
                    line = proc.stdout.readline()  # the job ran: the worker is up on that store
                    assert line.strip() == "shouted HI", (line, proc.stderr.read() if proc.stderr else "")
                    cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
                    assert b"worker" in cmdline and b"tasks_app:tasks" in cmdline, cmdline
                    assert secret.encode() not in cmdline, cmdline
                    assert b"postgres" not in cmdline.split(b"\0", 1)[1], cmdline
                finally:
                    proc.send_signal(signal.SIGTERM)
                    _, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
            assert secret not in err, err
            assert store.queue("app").get_job(job_id) is None, "acked"
    finally:
        drop_schema(schema)


def test_a_worker_given_only_alkstore_url_asks_for_its_tasks(tmp_path: Path) -> None:
    url = "postgresql://u:hunter2@127.0.0.1:1/db"
    r = _cli("worker", env=_env(ALKSTORE_URL=url))
    assert r.returncode == 2, r.stderr
    assert "--tasks" in r.stderr and "hunter2" not in r.stderr, r.stderr


# --- PGPASSWORD and the password file, against a server that asks -----------------


@pytest.fixture(scope="module")
def server() -> Iterator[PrivatePostgres]:
    if not have_initdb():
        pytest.skip(
            "needs initdb/pg_ctl (the postgresql server package) for a server that asks for passwords"
        )
    pg = PrivatePostgres(password="su-" + os.urandom(8).hex())
    try:
        pg.admin(f"CREATE ROLE app LOGIN PASSWORD '{APP_PW}'")
        pg.admin("GRANT CREATE ON DATABASE postgres TO app")
        yield pg
    finally:
        pg.close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME without .pgpass, and no PGPASSWORD / PGPASSFILE in this process."""
    for key in ("PGPASSWORD", "PGPASSFILE"):
        monkeypatch.delenv(key, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def _passfile(path: Path, *lines: str, mode: int = 0o600) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    path.chmod(mode)
    return path


def _opens(url: str) -> None:
    with alkstore.open(url, listen=False) as store:
        store.queue("q").enqueue({"n": 1})


def test_the_private_server_refuses_a_connection_without_the_password(
    server: PrivatePostgres, home: Path
) -> None:
    with pytest.raises(alkstore.DatabaseError, match="password"):
        _opens(server.url("app"))
    with pytest.raises(alkstore.DatabaseError, match="password authentication failed"):
        _opens(server.url("app", "wrong"))
    _opens(server.url("app", quote(APP_PW, safe="")))


def test_pgpassword_is_the_password_of_a_url_without_one(
    server: PrivatePostgres, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSWORD", APP_PW)
    _opens(server.url("app"))
    # A password in the URL comes first.
    monkeypatch.setenv("PGPASSWORD", "wrong")
    _opens(server.url("app", quote(APP_PW, safe="")))
    with pytest.raises(alkstore.DatabaseError, match="password authentication failed"):
        _opens(server.url("app"))


def test_the_first_matching_line_of_the_password_file_gives_the_password(
    server: PrivatePostgres, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = server.port
    passfile = _passfile(
        tmp_path / "pgpass",
        "# *:*:*:app:a-comment-never-matches",
        "",
        f"127.0.0.1:{port + 1}:postgres:app:wrong-port",
        f"localhost:{port}:postgres:app:wrong-host-name",
        f"127.0.0.1:{port}:otherdb:app:wrong-database",
        f"127.0.0.1:{port}:postgres:someone:wrong-user",
        f"127.0.0.1:{port}:postgres:app:{PASSFILE_PW}",
        "*:*:*:app:after-the-match-never-read",
    )
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    _opens(server.url("app"))


@pytest.mark.parametrize("line", ["*:*:*:app:{pw}", "127.0.0.1:*:*:*:{pw}", "*:{port}:postgres:*:{pw}"])
def test_a_star_in_the_password_file_matches_anything(
    server: PrivatePostgres, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    passfile = _passfile(tmp_path / "pgpass", line.format(pw=PASSFILE_PW, port=server.port))
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    _opens(server.url("app"))


def test_home_pgpass_is_read_without_pgpassfile(server: PrivatePostgres, home: Path) -> None:
    _passfile(home / ".pgpass", f"127.0.0.1:{server.port}:postgres:app:{PASSFILE_PW}")
    _opens(server.url("app"))


def test_a_password_file_others_can_read_is_ignored_and_the_error_says_so(
    server: PrivatePostgres, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passfile = _passfile(tmp_path / "pgpass", f"*:*:*:app:{PASSFILE_PW}", mode=0o640)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    with pytest.raises(alkstore.DatabaseError) as err:
        _opens(server.url("app"))
    assert str(passfile) in str(err.value) and "0600" in str(err.value), str(err.value)
    passfile.chmod(0o600)
    _opens(server.url("app"))


def test_pgpassword_comes_before_the_password_file(
    server: PrivatePostgres, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As libpq: with PGPASSWORD set, the password file is not read."""
    monkeypatch.setenv("PGPASSFILE", str(_passfile(tmp_path / "pgpass", f"*:*:*:app:{PASSFILE_PW}")))
    monkeypatch.setenv("PGPASSWORD", "wrong")
    with pytest.raises(alkstore.DatabaseError, match="password authentication failed"):
        _opens(server.url("app"))


def test_a_wrong_password_from_the_file_is_named_in_the_error(
    server: PrivatePostgres, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passfile = _passfile(tmp_path / "pgpass", "*:*:*:app:wrong-s3cret")
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    with pytest.raises(alkstore.DatabaseError) as err:
        _opens(server.url("app"))
    text = str(err.value)
    assert "password authentication failed" in text and f'password retrieved from file "{passfile}"' in text
    assert "wrong-s3cret" not in text


def test_the_command_line_runs_on_alkstore_url_and_a_password_file(
    server: PrivatePostgres, home: Path, tmp_path: Path
) -> None:
    schema = new_schema_name()
    with alkstore.open(server.url("app", quote(APP_PW, safe="")), schema=schema, listen=False) as store:
        store.queue("audit").enqueue({"n": 1})
    passfile = _passfile(tmp_path / "pgpass", f"127.0.0.1:{server.port}:postgres:app:{PASSFILE_PW}")
    env = _env(ALKSTORE_URL=server.url("app"), PGPASSFILE=str(passfile), HOME=str(home))
    r = _cli("stats", "--schema", schema, env=env)
    assert r.returncode == 0, r.stderr
    assert "audit" in r.stdout
    r = _cli("stats", "--schema", schema, env={**env, "PGPASSFILE": str(tmp_path / "none")})
    assert r.returncode == 1 and "password" in r.stderr, r.stderr
