"""Driving the dashboard's app in process, as a browser on its own page would.

A browser that loads ``http://127.0.0.1:8765/`` sends ``Host: 127.0.0.1:8765``
and, on a form post, ``Origin: http://127.0.0.1:8765``; :func:`browser_like`
gives Starlette's TestClient both, so the Host allow-list and the Origin check
(ADR 0025) see what they would in use. A test that plays an attacker overrides
either per request.
"""

from __future__ import annotations

import re

from starlette.applications import Starlette
from starlette.testclient import TestClient

__all__ = ["BASE", "browser_like", "csrf", "post"]

#: Where the in-process dashboard pretends to be served.
BASE = "http://127.0.0.1:8765"


def browser_like(app: Starlette, origin: str | None = BASE, base: str = BASE) -> TestClient:
    """A client at ``base`` whose requests carry ``Origin: origin`` (none when None)."""
    return TestClient(app, base_url=base, headers={} if origin is None else {"Origin": origin})


def csrf(client: TestClient, path: str = "/queue?name=emails") -> str:
    """Loads ``path`` (a page with a form) and returns the CSRF token its forms carry."""
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None, page.text
    return found.group(1)


def post(
    client: TestClient, token: str, headers: dict[str, str] | None = None, **form: str | list[str]
) -> int:
    """POSTs ``form`` (with ``token``) to /action; returns the status, redirects not followed."""
    response = client.post("/action", data={"csrf": token, **form}, headers=headers, follow_redirects=False)
    return response.status_code
