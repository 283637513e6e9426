"""The web dashboard of one store (SPEC §19): ``alkstore dashboard URL``.

Needs the ``dashboard`` extra (Starlette, Jinja2, uvicorn, prometheus-client);
``import alkstore`` imports none of it. ``create_app`` builds the ASGI app
(pages, actions, ``/metrics``, ``/healthz``) for a store; the command line
serves it with uvicorn.
"""

from __future__ import annotations

from alkstore.dashboard.app import create_app

__all__ = ["create_app"]
