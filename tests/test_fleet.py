"""64 worker processes against a Postgres server limited to max_connections=100,
direct and through PgBouncer in transaction mode (SPEC §26): every job handled
exactly once, no process meets a connection error, the server never over budget.

The run is benches/fleet.py's (its private server and pooler), with few jobs: the
point is the connection budget, not the rate (docs/benchmarks.md has the rates).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_pgbouncer

FLEET = Path(__file__).parent.parent / "benches" / "fleet.py"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_64_worker_processes_drain_exactly_once_direct_and_pooled(tmp_path: Path) -> None:
    require_pgbouncer()
    out = tmp_path / "fleet.json"
    argv = [
        sys.executable,
        str(FLEET),
        "-n",
        "640",
        "--widths",
        "64",
        "--kinds",
        "alkstore",
        "--json",
        str(out),
    ]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=880)
    assert run.returncode == 0, run.stderr[-4000:]
    rows = json.loads(out.read_text())
    assert {r["route"] for r in rows} == {"direct", "pgbouncer"}
    for r in rows:
        assert r["width"] == 64
        assert (r["handled"], r["exactly_once"], r["errors"]) == (640, True, 0), (r, run.stderr[-4000:])
        assert 0 < r["peak_connections"] <= 100, r
