"""``alkstore dashboard URL``: serves :mod:`alkstore.dashboard` with uvicorn (SPEC §19).

It binds 127.0.0.1 unless told otherwise, and binding anywhere else needs
credentials (``--auth USER:PASSWORD`` or ``ALKSTORE_DASHBOARD_AUTH``): a
dashboard that can requeue and purge must not be open to a network by
accident.
"""

from __future__ import annotations

import os

from alkstore._cli._target import CliError, open_existing

__all__ = ["LOCAL", "serve"]

LOCAL = {"127.0.0.1", "localhost", "::1"}


def serve(url: str, schema: str | None, host: str, port: int, read_only: bool, auth: str | None) -> int:
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
    except ImportError as exc:
        raise CliError(f"the dashboard needs the extra: pip install 'alkstore[dashboard]' ({exc})") from None
    with open_existing(url, schema) as store:
        app = create_app(store, read_only=read_only, auth=auth)
        print(
            f"alkstore dashboard on http://{host}:{port}/ ({store.engine}"
            f"{', read-only' if read_only else ''})",
            flush=True,
        )
        uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0
