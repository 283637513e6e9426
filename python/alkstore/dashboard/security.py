"""The dashboard's guards: HTTP Basic auth on every request, a CSRF token on every change.

The CSRF token is a double submit: a random value in a ``SameSite=Strict``,
HttpOnly cookie, repeated in a hidden field of every form. A POST whose field
does not match its cookie is refused. Neither check trusts the client's
``Origin``; both compare in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets

from starlette.requests import Request

__all__ = ["CSRF_COOKIE", "basic_auth_ok", "csrf_ok", "csrf_token"]

CSRF_COOKIE = "alkstore_csrf"


def basic_auth_ok(request: Request, expected: str | None) -> bool:
    """Whether the request carries ``expected`` (``USER:PASSWORD``) as HTTP Basic credentials;
    True when no credentials are configured."""
    if expected is None:
        return True
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def csrf_token(request: Request) -> str:
    """The request's CSRF cookie value, or a fresh one (set on the response by the caller)."""
    return request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)


def csrf_ok(request: Request, submitted: object) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE)
    return isinstance(submitted, str) and bool(cookie) and hmac.compare_digest(submitted, str(cookie))
