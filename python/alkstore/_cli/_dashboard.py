"""``alkstore dashboard URL``: serves :mod:`alkstore.dashboard` with uvicorn (SPEC §19).

It binds 127.0.0.1 unless told otherwise, and binding anywhere else needs
credentials (``--auth USER:PASSWORD`` or ``ALKSTORE_DASHBOARD_AUTH``): a
dashboard that can requeue and purge must not be open to a network by
accident. It answers only to the local names, ``--host`` and each
``--allowed-host`` (ADR 0025).

The socket is bound and listening before the banner is printed, so the banner
means the dashboard is up; a port that cannot be had is one line and exit 2.
"""

from __future__ import annotations

import contextlib
import os
import socket

from alkstore._cli._target import CliError, open_existing

__all__ = ["LOCAL", "serve"]

LOCAL = {"127.0.0.1", "localhost", "::1"}


def serve(
    url: str,
    schema: str | None,
    host: str,
    port: int,
    read_only: bool,
    auth: str | None,
    allowed_hosts: list[str],
) -> int:
    auth = auth or os.environ.get("ALKSTORE_DASHBOARD_AUTH") or None
    if auth is not None and ":" not in auth:
        raise CliError("--auth takes USER:PASSWORD", status=2)
    if host not in LOCAL and auth is None:
        raise CliError(
            f"binding {host} (not this machine only) needs --auth USER:PASSWORD or ALKSTORE_DASHBOARD_AUTH",
            status=2,
        )
    try:
        import uvicorn

        from alkstore.dashboard import create_app
        from alkstore.dashboard.hosts import allowed_name
    except ImportError as exc:
        raise CliError(f"the dashboard needs the extra: pip install 'alkstore[dashboard]' ({exc})") from None
    for name in allowed_hosts:
        try:
            allowed_name(name)
        except ValueError as exc:
            raise CliError(f"--allowed-host: {exc}", status=2) from None
    with open_existing(url, schema) as store:
        app = create_app(store, read_only=read_only, auth=auth, allowed_hosts=[host, *allowed_hosts])
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        with _listen(host, port) as sock:
            print(
                f"alkstore dashboard on http://{_shown(host)}:{port}/ "
                f"({store.engine}{', read-only' if read_only else ''})",
                flush=True,
            )
            # On Ctrl-C uvicorn shuts down gracefully, then raises the signal again for us.
            with contextlib.suppress(KeyboardInterrupt):
                server.run(sockets=[sock])
        if not server.started:
            raise CliError("the dashboard did not start")
    return 0


def _shown(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening: connections queue until uvicorn serves them."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        # As uvicorn does: a restart can bind while the last run's connections sit in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {_shown(host)}:{port}: {exc.strerror or exc}", status=2) from None
    return sock
