"""The Django app against real Django on both engines (SPEC §28).

Django's settings are process-wide, so each check runs the test project
(tests/contrib/djproject) in its own process: ``manage.py test`` runs its
``TestCase`` and ``TransactionTestCase`` classes (enqueue in ``atomic()``, the
worker command as a real subprocess, the admin pages under CSRF checks) on a
test database Django makes and drops; ``manage.py migrate`` makes the store's
tables on a fresh database.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import alkstore
from tests.conftest import PG_URL, pg_admin_connect, require_postgres

PROJECT = Path(__file__).parent / "contrib" / "djproject"


@contextmanager
def project_env(engine: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment that points the test project at a fresh database of ``engine``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ALK_DJ_", "DJANGO_"))}
    env["ALK_DJ_ENGINE"] = engine
    if engine == "sqlite":
        env["ALK_DJ_NAME"] = str(tmp_path / "app.db")
        env["ALK_DJ_TEST_NAME"] = str(tmp_path / "test.db")
        yield env
        return
    require_postgres()
    name = "dj_" + uuid.uuid4().hex[:12]
    with pg_admin_connect() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    env.update(ALK_DJ_PG_URL=PG_URL, ALK_DJ_NAME=name, ALK_DJ_TEST_NAME="test_" + name)
    try:
        yield env
    finally:
        with pg_admin_connect() as admin:
            for db in (name, "test_" + name):
                admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def manage(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def location(env: dict[str, str]) -> str:
    if env["ALK_DJ_ENGINE"] == "sqlite":
        return env["ALK_DJ_NAME"]
    return urlsplit(PG_URL)._replace(path="/" + env["ALK_DJ_NAME"]).geturl()


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_django_test_cases_pass_on_the_real_store(engine: str, tmp_path: Path) -> None:
    with project_env(engine, tmp_path) as env:
        out = manage(env, "test", "shop", "--noinput", "-v", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Ran 7 tests" in out.stderr, out.stderr
    assert "\nOK\n" in out.stderr, out.stderr


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_migrate_makes_the_store_tables(engine: str, tmp_path: Path) -> None:
    with project_env(engine, tmp_path) as env:
        migrated = manage(env, "migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        assert "Applying alkstore.0001_initial... OK" in migrated.stdout
        # The store exists: opening it without creating anything succeeds.
        with alkstore.open(location(env), _must_exist=True) as s:  # type: ignore[call-overload]  # private
            assert s.queues() == []
        again = manage(env, "alkstore_migrate")
        assert again.returncode == 0, again.stderr
        assert f"up to date ({engine})" in again.stdout
        unchanged = manage(env, "makemigrations", "alkstore", "--check", "--dry-run")
        assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr


def test_worker_command_needs_a_registry(tmp_path: Path) -> None:
    with project_env("sqlite", tmp_path) as env:
        out = manage(env, "alkstore_worker")
        wrong = manage(env, "alkstore_worker", "--tasks", "shop.jobs:nothing")
    assert out.returncode != 0 and "--tasks app.jobs:tasks" in out.stderr, out.stderr
    assert wrong.returncode != 0 and "has no attribute 'nothing'" in wrong.stderr, wrong.stderr


FRAMEWORKS = ("django", "fastapi", "starlette", "flask", "werkzeug", "click")


@pytest.mark.parametrize("module", ["alkstore", "alkstore.contrib", "alkstore.contrib.asgi"])
def test_no_framework_is_imported_unless_its_module_is(module: str) -> None:
    """``alkstore.contrib.asgi`` is plain ASGI: it needs no framework either."""
    probe = f"import sys, {module}; print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"
