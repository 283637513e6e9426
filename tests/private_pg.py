"""A throwaway Postgres server that asks for passwords (scram-sha-256 over TCP).

The shared test server trusts 127.0.0.1, so it never proves that a password was
sent. This one is made by ``initdb`` in a temporary directory on a free port,
started with ``pg_ctl`` and removed at ``close()``. initdb and postgres refuse to
run as root: as root they run as the ``postgres`` OS user (``runuser``), in a
directory that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile

__all__ = ["PrivatePostgres", "have_initdb"]


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for cand in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return cand
    return None


def have_initdb() -> bool:
    return _pg_bin("initdb") is not None and _pg_bin("pg_ctl") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivatePostgres:
    """One cluster whose superuser ``postgres`` has ``password``; TCP needs it."""

    def __init__(self, password: str) -> None:
        self.password = password
        self.dir = tempfile.mkdtemp(prefix="alkstore-pw-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.dir, "postgres", "postgres")
        pwfile = os.path.join(self.dir, "pwfile")
        with open(pwfile, "w") as f:
            f.write(password + "\n")
        if self.as_root:
            shutil.chown(pwfile, "postgres", "postgres")
        initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
        assert initdb is not None and pg_ctl is not None
        self.pg_ctl = pg_ctl
        try:
            auth = ["--auth-host=scram-sha-256", "--auth-local=trust"]
            self._run(
                [initdb, "-D", self.data, "-U", "postgres", "--pwfile", pwfile, "-N", "-E", "UTF8", *auth]
            )
            opts = (
                f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c max_connections=40 -c shared_buffers=16MB"
            )
            log = os.path.join(self.dir, "postgres.log")
            self._run([pg_ctl, "-D", self.data, "-l", log, "-w", "-t", "60", "-o", opts, "start"])
        except BaseException:
            self.close()
            raise

    def _run(self, argv: list[str]) -> None:
        if self.as_root:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {r.stdout[-2000:]} {r.stderr[-2000:]}")

    def url(self, user: str = "postgres", password: str | None = None) -> str:
        auth = user if password is None else f"{user}:{password}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/postgres"

    def admin(self, sql: str) -> None:
        """Runs ``sql`` as the superuser over the local socket (trusted)."""
        psql = _pg_bin("psql") or "psql"
        self._run([psql, "-h", self.dir, "-p", str(self.port), "-U", "postgres", "-d", "postgres", "-c", sql])

    def close(self) -> None:
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            with contextlib.suppress(RuntimeError):
                self._run([self.pg_ctl, "-D", self.data, "-m", "immediate", "-w", "stop"])
        shutil.rmtree(self.dir, ignore_errors=True)
