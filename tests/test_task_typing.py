"""A task's ``enqueue`` is typed with the function's parameters (SPEC §22):
mypy, run over a small file of misuses, reports each one on its line and
nothing else."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SAMPLE = Path(__file__).parent / "typing" / "tasks_misuse.py"


def test_mypy_flags_each_wrong_call_to_enqueue_and_nothing_else(tmp_path: Path) -> None:
    expected = {
        (n, m.group(1))
        for n, line in enumerate(SAMPLE.read_text().splitlines(), 1)
        if (m := re.search(r"# expect: ([\w-]+)", line))
    }
    assert len(expected) == 5
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path),
            str(SAMPLE),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    found = {
        (int(m.group(1)), m.group(2))
        for m in re.finditer(r"tasks_misuse\.py:(\d+): error: .*\[([\w-]+)\]$", done.stdout, re.M)
    }
    assert found == expected, done.stdout
