"""The dashboard's checks on a request (ADR 0025): HTTP Basic auth, the origin of a
change, and the CSRF token. Every comparison of a secret is in constant time.

The CSRF token is a *signed* double submit: ``nonce.HMAC(key, nonce)``, the key
random per :class:`CsrfTokens` (one per app, so per process), set in a
``SameSite=Strict``, HttpOnly cookie and repeated in every form. A page on
another port of 127.0.0.1 is the same *site*, so it can set that cookie; it
cannot sign a value, so a token of its choosing is refused. A plain double
submit (field equals cookie) would accept it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import Scope

from alkstore.dashboard.hosts import parse_host

__all__ = ["CSRF_COOKIE", "CsrfTokens", "basic_auth_ok", "same_origin"]

CSRF_COOKIE = "alkstore_csrf"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def basic_auth_ok(headers: Headers, expected: str | None) -> bool:
    """Whether the request carries ``expected`` (``USER:PASSWORD``) as HTTP Basic credentials;
    True when no credentials are configured."""
    if expected is None:
        return True
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def _origin(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the scheme's default port filled in; None if unusable."""
    parsed = parse_host(netloc)
    if scheme not in _DEFAULT_PORTS or parsed is None:
        return None
    host, port = parsed
    return scheme, host, port if port is not None else _DEFAULT_PORTS[scheme]


def same_origin(scope: Scope) -> bool:
    """Whether the request says it comes from the dashboard's own pages: its ``Origin``
    (or, when a browser sent none, its ``Referer``) is the origin the request reached,
    scheme, Host and port. Neither header, or ``Origin: null``: refused."""
    headers = Headers(scope=scope)
    claimed = headers.get("origin") or headers.get("referer")
    own = _origin(str(scope.get("scheme", "http")), headers.get("host", ""))
    if claimed is None or own is None:
        return False
    parts = urlsplit(claimed)
    return _origin(parts.scheme.lower(), parts.netloc) == own


class CsrfTokens:
    """Issues and checks the signed CSRF tokens of one dashboard app."""

    def __init__(self) -> None:
        # Per process, never stored: a restart invalidates every token, and the
        # next page load issues a new one.
        self._key = secrets.token_bytes(32)

    def _sign(self, nonce: str) -> str:
        mac = hmac.new(self._key, nonce.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def _signed(self, token: str) -> bool:
        nonce, dot, mac = token.partition(".")
        return bool(nonce and dot) and hmac.compare_digest(mac.encode(), self._sign(nonce).encode())

    def for_page(self, cookie: str | None) -> str:
        """The browser's token when this app signed it, else a new one (a cookie set
        by anyone else is replaced)."""
        if cookie is not None and self._signed(cookie):
            return cookie
        nonce = secrets.token_urlsafe(24)
        return f"{nonce}.{self._sign(nonce)}"

    def accepts(self, cookie: str | None, submitted: object) -> bool:
        """Whether a form's token is the cookie's and this app signed it."""
        if not isinstance(submitted, str) or cookie is None:
            return False
        return hmac.compare_digest(submitted.encode(), cookie.encode()) and self._signed(cookie)
