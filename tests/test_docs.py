"""Every ```python block of README.md and docs/*.md runs.

Each block runs as its own script in a fresh temporary directory (so a block's
`alkstore.open("app.db")` gets a fresh SQLite file), in a subprocess, against
the installed package. Blocks are self-contained: they open what they use.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)

#: Pages that explain a mechanism and must show it in runnable Python.
MECHANISM_PAGES = [
    "queues.md", "transactions.md", "waiting.md", "outbox.md", "scheduler.md",
    "streams.md", "locks.md", "workers.md", "cli.md", "state_machine.md",
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


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_docs_block_runs(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(block.code, encoding="utf-8")
    r = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, f"{block.name} failed:\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
