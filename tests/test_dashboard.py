"""The dashboard (SPEC §19) over HTTP, on both engines: every page, every action,
the guards (CSRF, read-only, auth) and the escaping.

The app is the real ASGI application, driven through Starlette's TestClient
(HTTP requests in process, against the real store).
"""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from starlette.testclient import TestClient

import alkstore
from alkstore.dashboard import create_app
from alkstore.dashboard.app import MAX_PAYLOAD_SHOWN
from tests.conftest import Target
from tests.dashboards import browser_like, csrf, post


@pytest.fixture
def client(store: alkstore.Store) -> TestClient:
    return browser_like(create_app(store))


def test_every_page_renders_what_the_store_holds(store: alkstore.Store, client: TestClient) -> None:
    q = store.queue("emails", max_attempts=1)
    q.enqueue({"to": "bob@example.com"})
    dead = q.claim("w")
    assert dead is not None and dead.fail("mailbox full")
    live = q.enqueue({"to": "ada@example.com"})
    store.queue("idle").pause()
    store.schedule("nightly", "@every 1h", "reports", payload={"kind": "nightly"})
    store.stream("orders").publish({"n": 1})
    store.stream("orders").save_offset("billing", 0)

    overview = client.get("/").text
    assert "emails" in overview and "idle" in overview and "paused" in overview
    queue = client.get("/queue", params={"name": "emails"}).text
    assert f"id={live}" in queue and "pending 1" in queue and "dead 1" in queue
    assert 'id="unseen"' not in queue
    # Issue 23: a name nobody used (a typo in the address) is flagged before a pause.
    typo = client.get("/queue", params={"name": "emials"}).text
    assert 'id="unseen"' in typo and "never had a job" in typo
    dead_page = client.get("/queue", params={"name": "emails", "state": "dead"}).text
    assert "mailbox full" in dead_page and "Requeue all" in dead_page
    job = client.get("/job", params={"queue": "emails", "id": live}).text
    assert "ada@example.com" in job
    assert "There is no job" in client.get("/job", params={"queue": "emails", "id": 999999}).text
    store.schedule("standup", "30 9 * * MON-FRI", "team", tz="Asia/Kolkata")
    catalog = client.get("/catalog").text
    assert "nightly" in catalog and "billing" in catalog and "reports" in catalog
    # The next three fires, in the schedule's zone (Kolkata is +05:30 all year).
    assert catalog.count("T09:30:00+05:30") == 3 and "Asia/Kolkata" in catalog
    assert client.get("/healthz").text == "ok"
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    assert 'alkstore_jobs{queue="emails",state="dead"} 1.0' in metrics.text
    assert client.get("/static/style.css").status_code == 200


def test_limits_show_on_the_overview_and_the_queue_page(store: alkstore.Store, client: TestClient) -> None:
    """SPEC §24: a queue's limits are visible where its counts are."""
    limited = store.queue("api-calls")
    limited.enqueue({"n": 1})
    limited.set_limits(concurrency=5, rate=(100, 60.0), group_concurrency=1)
    store.queue("plain").enqueue({"n": 2})
    overview = client.get("/").text
    row = re.search(r"<tr>\s*<td><a href=\"/queue\?name=api-calls\">.*?</tr>", overview, re.S)
    assert row is not None and "concurrency 5, rate 100/60s, group 1" in row.group(0), overview
    plain = re.search(r"<tr>\s*<td><a href=\"/queue\?name=plain\">.*?</tr>", overview, re.S)
    assert plain is not None and '<td class="limits">\N{EN DASH}</td>' in plain.group(0)
    page = client.get("/queue?name=api-calls").text
    assert "Limits: concurrency 5, rate 100/60s, group 1 (across every worker)" in page
    assert 'id="limits"' not in client.get("/queue?name=plain").text
    metrics = client.get("/metrics").text
    assert 'alkstore_queue_limit{kind="concurrency",queue="api-calls"} 5.0' in metrics
    assert 'alkstore_queue_limit{kind="rate_period_seconds",queue="api-calls"} 60.0' in metrics


def test_actions_change_the_store(store: alkstore.Store, client: TestClient) -> None:
    q = store.queue("emails", max_attempts=1)
    ids = q.enqueue_many([{"n": n} for n in range(6)])
    for job in q.claim_batch("w", 5):
        job.fail("boom")
    token = csrf(client, "/queue?name=emails")

    assert post(client, token, queue="emails", action="pause") == 303
    assert q.is_paused()
    assert post(client, token, queue="emails", action="resume") == 303
    assert not q.is_paused()
    assert post(client, token, queue="emails", action="requeue", id=str(ids[0])) == 303
    assert q.get_job(ids[0]) is not None and q.stats().dead == 4
    assert post(client, token, queue="emails", action="purge", id=str(ids[1])) == 303
    assert q.get_job(ids[1]) is None
    page = client.get("/queue", params={"name": "emails", "state": "dead"}).text
    assert page.count('form="selected"') == 3 and "Requeue selected" in page
    # The checked rows' ids go with the one button pressed.
    assert post(client, token, queue="emails", action="requeue", id=[str(ids[2]), str(ids[3])]) == 303
    assert q.stats().dead == 1 and q.get_job(ids[3]) is not None
    assert post(client, token, queue="emails", action="purge", all="1") == 303
    assert q.stats().dead == 0
    assert post(client, token, queue="emails", action="cancel", id=str(ids[5])) == 303
    assert q.get_job(ids[5]) is None
    assert post(client, token, queue="emails", action="explode") == 400


def test_requeue_all_moves_every_dead_job_it_can_and_ends(store: alkstore.Store, client: TestClient) -> None:
    q = store.queue("emails", max_attempts=1)
    keyed = q.enqueue({"k": 1}, unique_key="k")
    q.enqueue_many([{"n": n} for n in range(1500)])
    while jobs := q.claim_batch("w", 1000):
        for job in jobs:
            job.fail("boom")
    live = q.enqueue({"k": 2}, unique_key="k")  # the dead one's key is live again
    assert post(client, csrf(client), queue="emails", action="requeue", all="1") == 303
    assert [j.id for j in q.dead_jobs()] == [keyed], "only the job whose key is live stays dead"
    assert q.stats().pending == 1501 and q.get_job(live) is not None


def test_a_post_without_the_csrf_token_changes_nothing(store: alkstore.Store, client: TestClient) -> None:
    q = store.queue("emails")
    csrf(client)
    assert client.post("/action", data={"queue": "emails", "action": "pause"}).status_code == 403
    assert (
        client.post("/action", data={"csrf": "forged", "queue": "emails", "action": "pause"}).status_code
        == 403
    )
    other = browser_like(create_app(store))  # another browser: its own cookie, not this page's token
    assert post(other, csrf(client), queue="emails", action="pause") == 403
    assert not q.is_paused()


def test_read_only_refuses_every_change(store: alkstore.Store) -> None:
    client = browser_like(create_app(store, read_only=True))
    q = store.queue("emails")
    q.enqueue({})
    page = client.get("/queue", params={"name": "emails"}).text
    assert "read-only" in page and "disabled" in page
    assert post(client, csrf(client), queue="emails", action="pause") == 403
    assert not q.is_paused()


def test_auth_is_checked_on_every_request(store: alkstore.Store) -> None:
    client = browser_like(create_app(store, auth="ops:s3cret"))
    for path in ("/", "/metrics", "/static/style.css"):
        assert client.get(path).status_code == 401, path
    wrong = base64.b64encode(b"ops:guess").decode()
    assert client.get("/", headers={"Authorization": f"Basic {wrong}"}).status_code == 401
    right = base64.b64encode(b"ops:s3cret").decode()
    assert client.get("/", headers={"Authorization": f"Basic {right}"}).status_code == 200


def test_values_from_the_database_are_shown_as_text(store: alkstore.Store, client: TestClient) -> None:
    q = store.queue("emails", max_attempts=1)
    evil = q.enqueue({"html": "<script>alert(1)</script>", "attr": '"><img src=x onerror=alert(2)>'})
    job = q.claim("w")
    assert job is not None and job.fail("<b>not bold</b>")
    page = client.get("/job", params={"queue": "emails", "id": evil}).text
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page
    dead = client.get("/queue", params={"name": "emails", "state": "dead"}).text
    assert "<b>not bold</b>" not in dead and "&lt;b&gt;not bold&lt;/b&gt;" in dead


def test_a_large_payload_is_cut_past_64_kib(store: alkstore.Store, client: TestClient) -> None:
    q = store.queue("big")
    big = q.enqueue({"blob": "x" * (MAX_PAYLOAD_SHOWN * 2)})
    page = client.get("/job", params={"queue": "big", "id": big}).text
    assert "more characters not shown" in page
    assert len(page) < MAX_PAYLOAD_SHOWN + 20_000


def test_a_bad_queue_name_is_a_clear_400(client: TestClient) -> None:
    r = client.get("/queue", params={"name": "__alkstore_x"})
    assert r.status_code == 400 and "InvalidName" in r.text


def test_the_command_serves_until_interrupted_and_refuses_an_open_bind_without_auth(
    target: Target, store: alkstore.Store
) -> None:
    store.queue("emails").enqueue({})
    where = [target.location, *(["--schema", target.schema] if target.schema else [])]
    refused = subprocess.run(
        [sys.executable, "-m", "alkstore", "dashboard", *where, "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "ALKSTORE_DASHBOARD_AUTH"},
    )
    assert refused.returncode == 2 and "needs --auth" in refused.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with subprocess.Popen(
        [sys.executable, "-m", "alkstore", "dashboard", *where, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        body = ""
        try:
            for _ in range(100):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                        body = r.read().decode()
                    break
                except OSError:
                    time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
    assert 'alkstore_jobs{queue="emails",state="pending"} 1.0' in body, err
    assert proc.returncode == 0, err


def get_status(url: str, host: str) -> int:
    """One GET of ``url`` sending ``Host: host``, no retry; its status."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Host": host}), timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_banner_comes_once_the_port_listens_and_allowed_hosts_are_answered(
    target: Target, store: alkstore.Store
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    where = [target.location, *(["--schema", target.schema] if target.schema else [])]
    argv = [sys.executable, "-m", "alkstore", "dashboard", *where, "--port", str(port)]
    argv += ["--allowed-host", "dash.test", "--allowed-host", "Ops.Example.com"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()
            assert banner.startswith(f"alkstore dashboard on http://127.0.0.1:{port}/ ("), banner
            # No retry: the socket was listening before the banner was printed.
            url = f"http://127.0.0.1:{port}/"
            assert get_status(url, f"127.0.0.1:{port}") == 200
            assert get_status(url, "dash.test") == 200
            assert get_status(url, f"ops.example.com:{port}") == 200
            assert get_status(url, "attacker.example") == 421
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


def test_the_overview_charts_completions_per_minute(store: alkstore.Store, client: TestClient) -> None:
    q = store.queue("emails")
    q.enqueue_many([{"n": i} for i in range(3)])
    for job in q.claim_batch("w", 3):
        assert job.ack()
    page = client.get("/").text
    counts = [int(n) for n in re.findall(r'<rect [^>]*data-count="(\d+)"', page)]
    assert len(counts) == 60 and sum(counts) == 3 and counts[-1] in (0, 3)
    assert "3 jobs acked in the hour, at most 3 in a minute" in page
    row = re.search(r'<a href="/queue\?name=emails">emails</a></td>(.*?)</tr>', page, re.S)
    assert row is not None and "<td>3</td>" in row.group(1)


def test_the_chart_places_each_minute_and_drops_what_is_outside_the_hour() -> None:
    from dataclasses import dataclass
    from datetime import UTC, datetime, timedelta

    from alkstore.dashboard.chart import chart

    now = datetime(2026, 12, 4, 12, 30, 40, tzinfo=UTC)
    minute = now.replace(second=0)

    @dataclass
    class Row:
        queue: str
        minute: datetime
        count: int

    def row(queue: str, ago: int, count: int) -> Row:
        return Row(queue, minute - timedelta(minutes=ago), count)

    c = chart([row("a", 0, 4), row("b", 0, 2), row("a", 59, 1), row("a", 60, 100)], now)
    assert [b.count for b in c.bars][-1] == 6 and c.bars[0].count == 1
    assert (c.total, c.peak, c.per_queue) == (7, 6, {"a": 5, "b": 2})
    assert c.bars[-1].height == c.height and c.bars[0].height == c.height / 6
    assert c.bars[0].minute == minute - timedelta(minutes=59)
