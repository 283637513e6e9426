"""Every ```python block of README.md and docs/*.md runs.

Each block runs as its own script in a fresh temporary directory (so a block's
`alkstore.open("app.db")` gets a fresh SQLite file), in a subprocess, against
the installed package. Blocks are self-contained: they open what they use.

A block whose code mentions `DATABASE_URL` uses Postgres: it runs with that
environment variable pointing at a fresh database of its own, created on the
test server (ALKSTORE_TEST_DATABASE_URL) and dropped afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.conftest import PG_URL, require_postgres

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
USES_POSTGRES = re.compile(r"\bDATABASE_URL\b")  # not ALKSTORE_TEST_DATABASE_URL

#: Pages that explain a mechanism and must show it in runnable Python.
MECHANISM_PAGES = [
    "queues.md", "transactions.md", "waiting.md", "outbox.md", "scheduler.md",
    "streams.md", "locks.md", "workers.md", "cli.md", "state_machine.md", "tasks.md", "workflows.md",
    "frameworks.md",
]  # fmt: skip


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 2  # the first line of code
            found.append(Block(page, line, m.group(1)))
    return found


BLOCKS = blocks()


def test_every_mechanism_page_exists_and_has_runnable_python() -> None:
    for name in MECHANISM_PAGES:
        page = ROOT / "docs" / name
        assert page.exists(), f"missing docs/{name}"
        assert any(b.page == page for b in BLOCKS), f"docs/{name} has no ```python block"
    assert (ROOT / "docs" / "benchmarks.md").exists()


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, empty Postgres database on the test server, dropped on exit."""
    require_postgres()
    name = "docs_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlsplit(PG_URL)._replace(path="/" + name).geturl()
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(block: Block, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = cwd / "example.py"
    script.write_text(block.code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_docs_block_runs(block: Block, tmp_path: Path) -> None:
    if USES_POSTGRES.search(block.code):
        with fresh_database() as url:
            r = run(block, tmp_path, {**os.environ, "DATABASE_URL": url})
    else:
        r = run(block, tmp_path)
    assert r.returncode == 0, f"{block.name} failed:\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
