"""A private PgBouncer in transaction mode in front of a Postgres server (SPEC §26).

Started by the tests and the fleet benchmark on a free local port with a generated
config and auth file in a temporary directory — never the system service. PgBouncer
refuses to run as root; as root it is started with ``-u postgres`` (it drops to
that user), in a directory that user owns. Debian ships 1.18, which keeps no
prepared statements across transactions: stores opened through it need
``statements="unnamed"`` (ADR 0030).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from urllib.parse import urlsplit, urlunsplit


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class PgBouncer:
    """One pgbouncer process forwarding every database of ``server_url``'s server."""

    def __init__(self, server_url: str, pool_size: int = 20, max_client_conn: int = 1000) -> None:
        self.server = urlsplit(server_url)
        self.dir = tempfile.mkdtemp(prefix="alkstore-pgbouncer-")
        self.port = _free_port()
        as_root = os.geteuid() == 0
        user = self.server.username or "postgres"
        ini = os.path.join(self.dir, "pgbouncer.ini")
        with open(os.path.join(self.dir, "users.txt"), "w") as f:
            f.write(f'"{user}" "{self.server.password or ""}"\n')
        with open(ini, "w") as f:
            f.write(
                "[databases]\n"
                # `*`: any database name the client asks for, on the same server.
                f"* = host={self.server.hostname} port={self.server.port or 5432}\n"
                "[pgbouncer]\n"
                f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
                f"auth_type = trust\nauth_file = {self.dir}/users.txt\n"
                "pool_mode = transaction\n"
                f"default_pool_size = {pool_size}\nmax_client_conn = {max_client_conn}\n"
                # Sent at startup by psycopg / tokio-postgres; not pooled settings.
                "ignore_startup_parameters = extra_float_digits,options\n"
                f"logfile = {self.dir}/pgbouncer.log\npidfile = {self.dir}/pgbouncer.pid\n"
                "admin_users = " + user + "\n"
            )
        argv = ["pgbouncer", "-q", ini]
        if as_root:
            shutil.chown(self.dir, "postgres", "postgres")
            for name in os.listdir(self.dir):
                shutil.chown(os.path.join(self.dir, name), "postgres", "postgres")
            argv = ["pgbouncer", "-q", "-u", "postgres", ini]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not _answers(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"pgbouncer did not start: {self.log()}")
            time.sleep(0.05)

    def url(self, database: str | None = None) -> str:
        """The server URL with host and port replaced by this pooler's."""
        netloc = self.server.netloc.rsplit("@", 1)
        auth = netloc[0] + "@" if len(netloc) == 2 else ""
        path = f"/{database}" if database else self.server.path
        return urlunsplit((self.server.scheme, f"{auth}127.0.0.1:{self.port}", path, self.server.query, ""))

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "pgbouncer.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return "(no log)"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
