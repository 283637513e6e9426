"""A store a pre-release build made is refused at open, saying so, and left as it was (SPEC §34, ADR 0037).

alkstore 1.0 starts from one baseline schema per engine, schema version 100;
the pre-release builds wrote versions 1-22 through migrations that no longer
exist. The fixtures are stores two such builds wrote
(tests/fixtures/make_prerelease_fixtures.py says how): the last build before
the baseline (version 22) and an early one (version 4 on SQLite, 5 on
Postgres). Every way in refuses them with the documented message and writes
nothing: `alkstore.open()`, a Worker's open through the command line, and a
read-only command.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import alkstore
from tests.conftest import PG_URL, drop_schema, new_schema_name, pg_admin_connect, require_postgres
from tests.test_cli import HELPERS, helpers_path

FIXTURES = Path(__file__).parent / "fixtures"
BUILDS = {"e92d28b": ("22", "22"), "7a91874": ("4", "5")}
SAYS = "was made by a pre-release build of alkstore"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m alkstore ARGS``, with tests/helpers importable (a task registry)."""
    env = dict(os.environ, PYTHONPATH=helpers_path())
    return subprocess.run(
        [sys.executable, "-m", "alkstore", *args], capture_output=True, text=True, timeout=60, env=env, cwd=HELPERS
    )


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_a_pre_release_sqlite_file_is_refused_and_left_as_it_was(tmp_path: Path, build: str) -> None:
    path = tmp_path / "old.db"
    path.write_bytes((FIXTURES / f"store-{build}.db").read_bytes())
    before = digest(path)
    version = BUILDS[build][0]
    with pytest.raises(alkstore.DatabaseError) as err:
        alkstore.open(str(path))
    message = str(err.value)
    assert f"the store file {SAYS} (schema version {version})" in message, message
    assert "open a new file" in message and "Nothing was written to it." in message, message
    for args in (["stats", str(path)], ["worker", "--tasks", "tasks_app:tasks", str(path)]):
        r = cli(*args)
        assert r.returncode != 0 and SAYS in r.stderr, (args, r.stderr)
    assert digest(path) == before, "the file is byte for byte what the build left"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db"], "no WAL, no lock files"


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_a_pre_release_postgres_schema_is_refused_and_left_as_it_was(build: str) -> None:
    require_postgres()
    schema = new_schema_name()
    dump = (FIXTURES / f"store-{build}.pg.sql").read_text(encoding="utf-8")
    version = BUILDS[build][1]

    def state() -> list[tuple[object, ...]]:
        with pg_admin_connect() as pg:
            return pg.execute(
                "SELECT c.relname, c.reltuples, (SELECT value FROM \"" + schema + "\".meta "
                "WHERE key = 'schema_version') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s ORDER BY c.relname",
                [schema],
            ).fetchall()

    try:
        with pg_admin_connect() as pg:
            pg.execute(dump.replace("upgrade_fixture", schema).encode())
        before = state()
        with pytest.raises(alkstore.DatabaseError) as err:
            alkstore.open(PG_URL, schema=schema)
        message = str(err.value)
        assert f'schema "{schema}" {SAYS} (schema version {version})' in message, message
        assert "open a new schema" in message and "Nothing was written to it." in message, message
        r = cli("stats", PG_URL, "--schema", schema)
        assert r.returncode != 0 and SAYS in r.stderr, r.stderr
        assert state() == before
    finally:
        drop_schema(schema)


def test_a_new_store_is_of_the_baseline(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    alkstore.open(str(path)).close()
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").fetchone()
    conn.close()
    assert row == ("100",)
