"""The dashboard's ASGI layers (ADR 0025), outermost first:

1. :class:`Hardened` adds the response headers to every response, errors included,
   and ``Cache-Control: no-store`` to every one but the package's static files.
2. :class:`HostCheck` refuses (421) a Host that is not allowed, before anything else runs.
3. :class:`Guard` checks HTTP Basic auth, then that a change comes from the dashboard's
   own origin (403).
4. :class:`BodyLimit` refuses (413) a body over :data:`MAX_BODY` without reading it all.

Plain ASGI classes rather than Starlette's ``BaseHTTPMiddleware``: they answer
without touching the body, and ``BodyLimit`` hands the body it read on to the app.
``GET /healthz`` skips the Host and auth checks: its answer is a constant.
"""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from alkstore.dashboard.hosts import HostAllowList
from alkstore.dashboard.security import basic_auth_ok, same_origin

__all__ = ["MAX_BODY", "NO_STORE", "BodyLimit", "Guard", "Hardened", "HostCheck"]

#: The largest request body accepted: the biggest form (1,000 ids) is under 20 KiB.
MAX_BODY = 64 * 1024

_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})

#: The pages use only their own stylesheet and script, and are never framed.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "x-frame-options": "DENY",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    # Not no-referrer: the Origin check falls back to Referer, which same-origin keeps.
    "referrer-policy": "same-origin",
}
#: Pages, /metrics and error texts show payloads, errors and names: no browser
#: cache or proxy may keep them (behind --auth, the next user of the browser
#: would read them without the password). Only the package's own stylesheet
#: and script, under /static/, hold nothing of the store and may be cached.
NO_STORE = "no-store"


def _route_path(scope: Scope) -> str:
    """The path inside the app, also when it is mounted under a prefix."""
    path = str(scope["path"])
    root = str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


def _healthz(scope: Scope) -> bool:
    return scope["method"] in ("GET", "HEAD") and _route_path(scope) == "/healthz"


class Hardened:
    """Sets :data:`HEADERS` on every response the wrapped app sends, and
    :data:`NO_STORE` on every one but the static files'."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        stored = not _route_path(scope).startswith("/static/")

        async def send_hardened(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
                if stored:
                    headers["cache-control"] = NO_STORE
            await send(message)

        await self.app(scope, receive, send_hardened)


class HostCheck:
    """Answers 421 to a request whose Host the allow-list does not hold."""

    def __init__(self, app: ASGIApp, allowed: HostAllowList) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not _healthz(scope):
            host = Headers(scope=scope).get("host")
            if not self.allowed.allows(host):
                shown = repr((host or "")[:100])
                text = (
                    f"this dashboard does not answer to the host {shown}: open it as "
                    "http://127.0.0.1:PORT/, or start it with --allowed-host NAME"
                )
                await PlainTextResponse(text, status_code=421)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Guard:
    """HTTP Basic auth when configured (401), then the origin of a change (403)."""

    def __init__(self, app: ASGIApp, auth: str | None) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not _healthz(scope) and not basic_auth_ok(Headers(scope=scope), self.auth):
            await PlainTextResponse(
                "authentication required",
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="alkstore"'},
            )(scope, receive, send)
            return
        if scope["method"] not in _SAFE and not same_origin(scope):
            text = "refused: this request does not come from the dashboard's own pages (Origin)"
            await PlainTextResponse(text, status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """Reads a request's body, at most :data:`MAX_BODY` bytes, before the app sees it;
    answers 413 as soon as it is over, from ``Content-Length`` or the bytes counted."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _SAFE:
            await self.app(scope, receive, send)
            return
        too_large = PlainTextResponse(f"request body over {MAX_BODY // 1024} KiB", status_code=413)
        length = Headers(scope=scope).get("content-length")
        if length is not None and not length.isdigit():
            await PlainTextResponse("bad Content-Length", status_code=400)(scope, receive, send)
            return
        if length is not None and int(length) > MAX_BODY:
            await too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away: nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: Message | None = {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        async def replay() -> Message:
            nonlocal body
            if body is None:
                return await receive()  # after the body: the server's disconnect
            message, body = body, None
            return message

        await self.app(scope, replay, send)
