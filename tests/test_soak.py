"""The soak's 60-second profile on each engine (SPEC §27): real worker, producer,
scheduler, subscriber and relay processes under seeded random faults, then the
ledger check of ``benches/soak_check.py``. It asserts the ledger — no violation,
every fault kind of the engine injected at least once — never a time.

On Postgres the soak starts its own throwaway instance with ``initdb`` (it
restarts and kills it), so it needs the server binaries, not the shared server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).parent.parent / "benches" / "soak.py"
KINDS = {
    "sqlite": {"kill_worker", "kill_producer", "stop_worker", "kill_checkpoint"},
    "postgres": {"kill_worker", "kill_producer", "stop_worker", "pg_terminate", "pg_restart", "pg_kill"},
}


def _have_initdb() -> bool:
    return shutil.which("initdb") is not None or bool(list(Path("/usr/lib/postgresql").glob("*/bin/initdb")))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_soak_profile_keeps_the_ledger(engine: str, tmp_path: Path) -> None:
    if engine == "postgres" and not _have_initdb():
        msg = "the Postgres soak needs initdb/pg_ctl (postgresql server package) for its private instance"
        if os.environ.get("ALKSTORE_REQUIRE_POSTGRES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    report_path = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SOAK),
            "--profile",
            "ci",
            "--engine",
            engine,
            "--seed",
            os.environ.get("ALKSTORE_SOAK_SEED", "1"),
            "--run-dir",
            str(tmp_path / "run"),
            "--json",
            str(report_path),
        ],
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert report_path.exists(), f"the soak wrote no report:\n{proc.stdout}\n{proc.stderr}"
    report = json.loads(report_path.read_text())
    assert report["violations"] == [], proc.stdout
    missing = {k for k in KINDS[engine] if report["faults_by_kind"].get(k, 0) < 1}
    assert not missing, f"fault kinds never injected: {missing}\n{proc.stdout}"
    assert report["counts"]["ledger_rows"] > 0 and report["counts"]["executions"] > 0, proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
