"""The dashboard's trust model (ADR 0025), over HTTP in process, on both engines.

The Host allow-list against DNS rebinding, the Origin check and the signed
CSRF token against cross-origin posts and cookie tossing, the headers every
response carries, the body limit, the 404 of a missing job, and ``/healthz``
answering without credentials. Each attack is played as the browser would send
it: the Host and Origin a page of that origin produces.
"""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path
from typing import cast

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from starlette.types import Message, Scope

import alkstore
from alkstore.dashboard import create_app
from tests.dashboards import BASE, browser_like, csrf, post

TEMPLATES = Path(alkstore.__file__).parent / "dashboard" / "templates"
CSP = [
    "default-src 'self'",
    "script-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
]


def assert_hardened(response: object, what: str) -> None:
    headers = response.headers  # type: ignore[attr-defined]
    assert headers.get("x-frame-options") == "DENY", what
    assert headers.get("x-content-type-options") == "nosniff", what
    assert headers.get("referrer-policy") == "same-origin", what
    policy = [d.strip() for d in headers.get("content-security-policy", "").split(";")]
    for directive in CSP:
        assert directive in policy, (what, policy)


def toss(client: TestClient, value: str, domain: str = "127.0.0.1") -> None:
    """Sets the CSRF cookie as a page on another port would: it replaces the dashboard's."""
    client.cookies.set("alkstore_csrf", value, domain=domain, path="/")


# -- Host: DNS rebinding -------------------------------------------------------------


def test_a_rebound_name_reads_nothing_and_changes_nothing(store: alkstore.Store) -> None:
    """A page whose own name now points at 127.0.0.1 is same-origin with itself:
    its Host and Origin agree, so only the Host allow-list stops it."""
    q = store.queue("emails")
    q.enqueue({"secret": "payload"})
    rebound = "http://attacker.example:8765"
    client = browser_like(create_app(store), origin=rebound, base=rebound)
    for path in ("/", "/queue?name=emails", "/catalog", "/metrics", "/static/style.css"):
        r = client.get(path)
        assert r.status_code == 421, path
        assert "secret" not in r.text and "emails" not in r.text, path
        assert "--allowed-host" in r.text, "the refusal says how to allow a name"
    # Even holding a well-formed pair (here tossed in by the page itself), nothing runs.
    toss(client, "chosen", "attacker.example")
    assert post(client, "chosen", queue="emails", action="pause") == 421
    assert not q.is_paused()


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "127.0.0.1", "localhost:8765", "LOCALHOST", "[::1]:8765"])
def test_the_local_names_are_allowed_with_or_without_the_port(store: alkstore.Store, host: str) -> None:
    client = browser_like(create_app(store))
    assert client.get("/", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["attacker.example", "127.0.0.1.attacker.example", "localhost.", "", "a b"])
def test_any_other_host_is_refused_with_421(store: alkstore.Store, host: str) -> None:
    r = browser_like(create_app(store)).get("/", headers={"Host": host})
    assert r.status_code == 421, host
    assert_hardened(r, "421")


def test_allowed_hosts_adds_names_to_the_local_ones(store: alkstore.Store) -> None:
    app = create_app(store, allowed_hosts=["dash.example.com", "::2", "10.0.0.7:8765"])
    client = browser_like(app)
    for host in ("dash.example.com", "Dash.Example.com:443", "[::2]:8765", "10.0.0.7:9999", "127.0.0.1:8765"):
        assert client.get("/", headers={"Host": host}).status_code == 200, host
    assert client.get("/", headers={"Host": "example.com"}).status_code == 421
    with pytest.raises(ValueError, match="allowed host"):
        create_app(store, allowed_hosts=["https://dash.example.com/"])


def test_a_mounted_dashboard_answers_on_the_names_it_is_given(store: alkstore.Store) -> None:
    """TestClient's default host, ``testserver``, is not a local name: it must be allowed."""
    assert TestClient(create_app(store)).get("/").status_code == 421
    assert TestClient(create_app(store, allowed_hosts=["testserver"])).get("/").status_code == 200


# -- Origin and the CSRF token ----------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:9999"},  # another port of the same machine: same site
        {"Origin": "https://127.0.0.1:8765"},  # another scheme
        {"Origin": "http://localhost:8765"},  # another name for the same socket is another origin
        {"Origin": "null"},  # a sandboxed frame, a data: URL
        {"Origin": "http://attacker.example"},
    ],
)
def test_a_post_from_another_origin_is_refused_even_with_the_right_token(
    store: alkstore.Store, headers: dict[str, str]
) -> None:
    q = store.queue("emails")
    client = browser_like(create_app(store))
    token = csrf(client)
    r = client.post(
        "/action",
        data={"csrf": token, "queue": "emails", "action": "pause"},
        headers=headers,
        follow_redirects=False,
    )
    assert r.status_code == 403 and "origin" in r.text.lower(), r.text
    assert not q.is_paused()
    assert post(client, token, queue="emails", action="pause") == 303, "the same post from the page works"
    assert q.is_paused()


def test_without_origin_the_referer_decides_and_without_both_a_post_is_refused(store: alkstore.Store) -> None:
    q = store.queue("emails")
    client = browser_like(create_app(store), origin=None)
    token = csrf(client)
    assert post(client, token, queue="emails", action="pause") == 403
    elsewhere = {"Referer": "http://127.0.0.1:9999/queue?name=emails"}
    assert post(client, token, headers=elsewhere, queue="emails", action="pause") == 403
    assert not q.is_paused()
    own = {"Referer": f"{BASE}/queue?name=emails"}
    assert post(client, token, headers=own, queue="emails", action="pause") == 303
    assert q.is_paused()


def test_a_tossed_cookie_with_a_token_of_the_attackers_choosing_is_refused(store: alkstore.Store) -> None:
    """Another port of 127.0.0.1 is the same site, so its page can set the dashboard's
    cookie. The token must be one the dashboard signed, not merely equal to the cookie."""
    q = store.queue("emails")
    client = browser_like(create_app(store))
    csrf(client)
    toss(client, "chosen-by-the-attacker")
    assert post(client, "chosen-by-the-attacker", queue="emails", action="pause") == 403
    assert not q.is_paused()
    # The next page the operator loads replaces the tossed cookie with a signed one.
    token = csrf(client)
    assert token != "chosen-by-the-attacker"
    assert client.cookies.get("alkstore_csrf") == token
    assert post(client, token, queue="emails", action="pause") == 303
    assert q.is_paused()


def test_a_token_signed_by_another_dashboard_process_is_refused(store: alkstore.Store) -> None:
    q = store.queue("emails")
    earlier = browser_like(create_app(store))
    token = csrf(earlier)
    restarted = browser_like(create_app(store))
    toss(restarted, token)
    assert post(restarted, token, queue="emails", action="pause") == 403
    assert not q.is_paused()


# -- headers, body limit, 404, /healthz ----------------------------------------------


def test_every_response_carries_the_hardening_headers(store: alkstore.Store) -> None:
    q = store.queue("emails")
    job = q.enqueue({})
    client = browser_like(create_app(store, auth="ops:pw"))
    basic = {"Authorization": "Basic " + base64.b64encode(b"ops:pw").decode()}
    responses = {
        "401": client.get("/"),
        "/healthz": client.get("/healthz"),
        "421": client.get("/", headers={**basic, "Host": "attacker.example"}),
        "403": client.post("/action", data={"csrf": "x"}, headers=basic),
        "413": client.post("/action", content=b"x" * 70_000, headers=basic),
        "404": client.get("/job", params={"queue": "emails", "id": 999999}, headers=basic),
        "400": client.get("/queue", params={"name": "__alkstore_x"}, headers=basic),
    }
    for path in ("/", "/queue?name=emails", f"/job?queue=emails&id={job}", "/catalog", "/metrics"):
        responses[path] = client.get(path, headers=basic)
    responses["/static"] = client.get("/static/confirm.js", headers=basic)
    for what, r in responses.items():
        assert r.status_code == (int(what) if what.isdigit() else 200), (what, r.status_code, r.text)
        assert_hardened(r, what)


def test_the_templates_hold_no_inline_script() -> None:
    """script-src 'self' runs no inline script or handler: the pages must need none."""
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), template.name
        assert not re.search(r"\son[a-z]+\s*=", text), template.name
        assert "javascript:" not in text and "style=" not in text, template.name


def run_post(app: Starlette, headers: dict[str, str], chunks: list[bytes]) -> tuple[int, int]:
    """POSTs ``chunks`` to /action straight through ASGI, one receive() each;
    returns the status and how many chunks the app asked for."""
    messages: list[Message] = []
    pulled = 0
    pending = chunks

    async def receive() -> Message:
        nonlocal pulled
        if pulled < len(pending):
            pulled += 1
            return {"type": "http.request", "body": pending[pulled - 1], "more_body": pulled < len(pending)}
        await asyncio.Event().wait()  # the body is over: wait, as a server does, for a disconnect
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        messages.append(message)

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/action",
        "raw_path": b"/action",
        "root_path": "",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in messages if m["type"] == "http.response.start")
    return int(start["status"]), pulled


def test_a_body_over_64_kib_is_refused_with_413_without_being_read(store: alkstore.Store) -> None:
    q = store.queue("emails")
    app = create_app(store)
    client = browser_like(app)
    token = csrf(client)
    cookie = f"alkstore_csrf={token}"
    page = b"x" * 65536
    origin = {"host": "127.0.0.1:8765", "origin": BASE, "cookie": cookie}
    form = {**origin, "content-type": "application/x-www-form-urlencoded"}

    # 50 MiB announced: refused on the header alone, not a byte read.
    announced = {**form, "content-length": str(50 * 2**20)}
    assert run_post(app, announced, [page] * 800) == (413, 0)
    # Chunked, no length: refused once the count passes the limit, not at the end.
    status, pulled = run_post(app, form, [page] * 800)
    assert status == 413 and pulled <= 2, pulled
    # A post that passes, through the same path: the body is handed on whole.
    body = f"csrf={token}&queue=emails&action=pause".encode()
    assert run_post(app, {**form, "content-length": str(len(body))}, [body[:10], body[10:]])[0] == 303
    assert q.is_paused()


def test_a_missing_job_is_a_404(store: alkstore.Store) -> None:
    client = browser_like(create_app(store))
    r = client.get("/job", params={"queue": "emails", "id": 999999})
    assert r.status_code == 404 and "There is no job 999999 of emails" in r.text


def test_healthz_answers_without_credentials_and_reveals_nothing(store: alkstore.Store) -> None:
    client = browser_like(create_app(store, auth="ops:pw"))
    assert client.get("/").status_code == 401
    healthz = client.get("/healthz")
    assert (healthz.status_code, healthz.text) == (200, "ok")
    # Any Host: a liveness probe sends the pod's address, and "ok" is all there is to read.
    assert client.get("/healthz", headers={"Host": "10.1.2.3:8765"}).text == "ok"
    assert client.post("/healthz", headers={"Host": "10.1.2.3:8765"}).status_code == 421
    store.close()
    down = client.get("/healthz")
    assert (down.status_code, down.text) == (503, "unavailable")


def test_a_server_error_carries_the_hardening_headers_too() -> None:
    """The headers are added outside Starlette's own error handler."""

    class Broken:
        engine = "sqlite"

        def completions(self, minutes: int) -> list[object]:
            raise RuntimeError("the store broke")

    app = create_app(cast("alkstore.Store", Broken()))
    r = TestClient(app, base_url=BASE, raise_server_exceptions=False).get("/")
    assert r.status_code == 500 and "the store broke" not in r.text
    assert_hardened(r, "500")


# -- caching (issue 44, item 7) ------------------------------------------------------


def test_no_response_with_stored_data_may_be_cached(store: alkstore.Store) -> None:
    """Pages show payloads, errors and names, and /metrics the queue names: a
    browser's cache or a proxy on the way must not keep them (even behind
    --auth, where the next user of the machine would find them). Every response
    but the package's own static files says ``Cache-Control: no-store``."""
    q = store.queue("emails", max_attempts=1)
    dead, live = q.enqueue_many([{"secret": "payload"}, {"secret": "live"}])
    job = q.claim("w")
    assert job is not None and job.id == dead and job.fail("the secret error")
    for auth in (None, "ops:pw"):
        client = browser_like(create_app(store, auth=auth))
        headers = {} if auth is None else {"Authorization": "Basic " + base64.b64encode(b"ops:pw").decode()}
        token = csrf(client) if auth is None else ""
        responses = {
            path: client.get(path, headers=headers)
            for path in (
                "/",
                "/queue?name=emails",
                "/queue?name=emails&state=dead",
                f"/job?queue=emails&id={dead}",
                f"/job?id={live}",
                "/job?id=999999",
                "/queue?name=__alkstore_x",
                "/catalog",
                "/metrics",
                "/healthz",
            )
        }
        if auth is None:
            responses["303"] = client.post(
                "/action", data={"csrf": token, "queue": "emails", "action": "pause"}, follow_redirects=False
            )
        else:
            responses["401"] = client.get("/job", params={"queue": "emails", "id": dead})
        for what, r in responses.items():
            assert r.headers.get("cache-control") == "no-store", (auth, what, r.status_code, r.headers)
        static = client.get("/static/style.css", headers=headers)
        assert static.status_code == 200 and "no-store" not in static.headers.get("cache-control", ""), (
            "the package's stylesheet holds no stored data: it may be cached"
        )
