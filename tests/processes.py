"""Helper processes for the multi-process tests: start one from `helpers/`,
read its lines with a timeout, kill it."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

HELPERS = Path(__file__).parent / "helpers"


@contextmanager
def spawn(script: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A helper process with a stdin pipe, killed (if still running) and reaped on exit."""
    with subprocess.Popen(
        [sys.executable, str(HELPERS / script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)


def read_line(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The helper's next stdout line, or a failure with its stderr."""
    name = str(proc.args[1]) if isinstance(proc.args, list) else str(proc.args)
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            pytest.fail(f"{name} printed nothing within {timeout}s")
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        assert proc.stderr is not None
        pytest.fail(f"{name} exited ({proc.returncode}) early: {proc.stderr.read()}")
    return line.strip()


def sigkill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
