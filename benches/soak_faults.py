"""The soak's private Postgres instance and its fault log (SPEC §27).

The instance lives in a temporary directory made by ``initdb`` on a free port;
the soak restarts it and kills it with SIGKILL, so it must never be the
machine's shared server. initdb and postgres refuse to run as root: as root,
they run as the ``postgres`` OS user (``runuser``), in a directory it owns.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any


def _pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for cand in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return cand
    raise SystemExit(f"{name} not found on PATH nor under /usr/lib/postgresql/*/bin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivatePostgres:
    """A throwaway cluster: initdb, start, restart, kill -9, stop, remove."""

    def __init__(self, log_dir: str, max_connections: int = 200) -> None:
        self.max_connections = max_connections
        self.dir = tempfile.mkdtemp(prefix="alkstore-soak-pg-")
        self.data = os.path.join(self.dir, "data")
        # The server's log stays in its own directory (the postgres user may not
        # reach log_dir, a test's private tmp_path say) and is copied there at close.
        self.log = os.path.join(self.dir, "postgres.log")
        self.log_copy = os.path.join(log_dir, "postgres.log")
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(
            [_pg_bin("initdb"), "-D", self.data, "-A", "trust", "-U", "postgres", "-N", "-E", "UTF8"],
            quiet=True,
        )
        self.start()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, argv: list[str], quiet: bool = False, check: bool = True) -> int:
        if self.as_root:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        out = subprocess.DEVNULL if quiet else None
        return subprocess.run(
            argv, stdout=out, stderr=subprocess.STDOUT if quiet else None, check=check
        ).returncode

    def _ctl(self, *args: str, check: bool = True) -> int:
        opts = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            f"-c max_connections={self.max_connections} -c shared_buffers=32MB"
        )
        return self._run(
            [_pg_bin("pg_ctl"), "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o", opts, *args],
            quiet=True,
            check=check,
        )

    def start(self) -> None:
        # After a kill -9 the orphaned backends take a moment to notice and exit;
        # until then the new postmaster refuses the old shared memory.
        for _ in range(120):
            if self._ctl("start", check=False) == 0:
                return
            time.sleep(0.5)
        shutil.copyfile(self.log, self.log_copy)
        raise RuntimeError(f"the private Postgres did not start; see {self.log_copy}")

    def restart(self, mode: str) -> None:
        self._ctl("restart", "-m", mode)

    def postmaster_pid(self) -> int | None:
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (OSError, ValueError):
            return None

    def kill9(self) -> None:
        pid = self.postmaster_pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            while True:  # wait for it to be gone before starting a new one
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
        self.start()

    def terminate_alkstore_backends(self, fraction: float, rng: Any) -> int:
        """pg_terminate_backend on (a random share of) alkstore's own connections."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True, application_name="soak-admin") as c:
            pids = [
                r[0]
                for r in c.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = 'alkstore' "
                    "AND pid <> pg_backend_pid()"
                ).fetchall()
            ]
            chosen = [p for p in pids if rng.random() < fraction] or pids[:1]
            for p in chosen:
                c.execute("SELECT pg_terminate_backend(%s)", [p])
            return len(chosen)

    def close(self) -> None:
        self._ctl("stop", "-m", "immediate", check=False)
        if os.path.exists(self.log):
            shutil.copyfile(self.log, self.log_copy)
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class FaultLog:
    """Every fault with its time, kind, target and what happened; one JSON line each."""

    path: str
    faults: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, t0: float, t1: float, **details: Any) -> dict[str, Any]:
        rec = {"kind": kind, "t0": t0, "t1": t1, **details}
        with self.lock:
            self.faults.append(rec)
            with open(self.path, "a") as f:
                f.write(json.dumps(rec) + "\n")
        return rec

    @staticmethod
    def load(path: str) -> list[dict[str, Any]]:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
