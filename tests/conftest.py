"""Fixtures shared by the conformance suite (SPEC §15).

Every contract test takes the ``store`` fixture, which is parametrised over
both engines: a fresh SQLite file under ``tmp_path``, or a fresh Postgres
schema that is dropped after the test. The suite imports the *installed*
``alkstore`` package; nothing here touches ``sys.path``.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from hypothesis import HealthCheck, settings

import alkstore
from tests.pgbouncer import PgBouncer

if TYPE_CHECKING:
    from alkstore import Store

PG_URL = os.environ.get("ALKSTORE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
ENGINES = ["sqlite", "postgres"]
# Modules marked `pgbouncer` also run every test through PgBouncer in transaction
# mode (SPEC §26): the `pgbouncer` engine is Postgres behind the pooler.
POOLED = "pgbouncer"
ADMIN_APP = "alkstore-test-admin"

# Hypothesis: `fast` by default, `slow` (many more examples) for a nightly run.
# No deadline: a single example opens a real database and its timing varies.
settings.register_profile(
    "fast", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "slow", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too so the marker works with or without the project's pytest config.
    config.addinivalue_line("markers", "slow: long-running test (many jobs, several processes)")
    config.addinivalue_line(
        "markers", "pgbouncer: the module's store tests also run through PgBouncer (transaction mode)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrises `engine`: both engines, plus `pgbouncer` under the marker."""
    if "engine" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        listed = names.replace(" ", "").split(",") if isinstance(names, str) else list(names)
        if "engine" in listed:
            return  # the test names its engines itself
    pooled = metafunc.definition.get_closest_marker("pgbouncer") is not None
    metafunc.parametrize("engine", [*ENGINES, POOLED] if pooled else ENGINES, indirect=True)


def redact(url: str) -> str:
    """The URL with any password replaced, for messages."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


@functools.cache
def _pg_problem() -> str | None:
    """Why Postgres cannot be used, or None when it answers (checked once per session)."""
    try:
        with psycopg.connect(PG_URL, connect_timeout=2, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return redact(f"{type(exc).__name__}: {exc}".strip())
    return None


def require_postgres() -> None:
    """Skips (or, under ALKSTORE_REQUIRE_POSTGRES=1, fails) when Postgres does not answer."""
    problem = _pg_problem()
    if problem is None:
        return
    msg = (
        f"Postgres not reachable at ALKSTORE_TEST_DATABASE_URL={redact(PG_URL)}; "
        f"set ALKSTORE_TEST_DATABASE_URL or start a server ({problem})"
    )
    if os.environ.get("ALKSTORE_REQUIRE_POSTGRES") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def pg_admin_connect() -> psycopg.Connection[tuple[object, ...]]:
    """A plain psycopg connection for test setup and inspection, outside alkstore."""
    return psycopg.connect(PG_URL, autocommit=True, application_name=ADMIN_APP, connect_timeout=5)


def drop_schema(schema: str) -> None:
    with pg_admin_connect() as conn:
        # Bounded: a leaked alkstore transaction must fail the teardown, not hang it.
        conn.execute("SET lock_timeout = '20s'")
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def new_schema_name() -> str:
    return "t_" + uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class Target:
    """Where a test's store lives: enough to open a second handle or hand it to a subprocess."""

    engine: str
    location: str  # the SQLite file path, or the Postgres URL (the pooler's, when pooled)
    schema: str | None  # the engine-owned pg schema; None on SQLite
    pooled: bool = False  # behind PgBouncer in transaction mode

    def open(self, **options: Any) -> Store:
        if self.schema is not None:
            options.setdefault("schema", self.schema)
        if self.pooled:
            # What a user behind a transaction pooler passes (ADR 0030); wakes
            # LISTEN on a direct session, as docs/scaling.md recommends.
            options.setdefault("statements", "unnamed")
            options.setdefault("listen_url", PG_URL)
        return alkstore.open(self.location, **options)

    def argv(self) -> list[str]:
        """Two command-line words a helper script turns back into `open()` arguments.

        A pooled target's helpers connect directly: a fleet may mix both."""
        return [PG_URL if self.pooled else self.location, self.schema or "-"]

    def table(self, base: str) -> str:
        """A unique name for the user's own table; on pg inside the test schema (dropped with it)."""
        name = f"{base}_{uuid.uuid4().hex[:8]}"
        return f'"{self.schema}".{name}' if self.schema else name

    def ph(self, i: int) -> str:
        """The i-th (1-based) parameter placeholder of this engine's SQL."""
        return "?" if self.engine == "sqlite" else f"${i}"


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def require_pgbouncer() -> None:
    """Postgres, and the `pgbouncer` program (Debian's package; .ci/run installs it):
    skips without it, or fails under ALKSTORE_REQUIRE_POSTGRES=1."""
    require_postgres()
    if shutil.which("pgbouncer") is not None:
        return
    msg = "pgbouncer is not installed (apt-get install pgbouncer)"
    if os.environ.get("ALKSTORE_REQUIRE_POSTGRES") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def pgbouncer() -> Iterator[PgBouncer]:
    """One PgBouncer (transaction mode) in front of the test server, for the session."""
    require_pgbouncer()
    bouncer = PgBouncer(PG_URL)
    yield bouncer
    bouncer.close()


@pytest.fixture
def target(engine: str, tmp_path: os.PathLike[str], request: pytest.FixtureRequest) -> Iterator[Target]:
    if engine == "sqlite":
        yield Target("sqlite", os.path.join(tmp_path, "t.db"), None)
        return
    require_postgres()
    schema = new_schema_name()
    if engine == POOLED:
        bouncer: PgBouncer = request.getfixturevalue("pgbouncer")
        yield Target("postgres", bouncer.url(), schema, pooled=True)
    else:
        yield Target("postgres", PG_URL, schema)
    drop_schema(schema)


@pytest.fixture
def store_factory(target: Target) -> Iterator[Callable[..., Store]]:
    """Opens further handles on the test's target; all are closed after the test."""
    opened: list[Store] = []

    def factory(**options: object) -> Store:
        s = target.open(**options)
        opened.append(s)
        return s

    yield factory
    for s in opened:
        s.close()


@pytest.fixture
def store(store_factory: Callable[..., Store]) -> Store:
    return store_factory()
