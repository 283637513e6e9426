"""The dashboard (SPEC §19) in a real browser, on both engines.

Debian's chromium, headless, driven by selenium through Debian's chromedriver,
against the real ``alkstore dashboard`` command: every page opens, the buttons
are pressed as an operator presses them (confirm dialogs included), and the
guards hold in the browser: CSRF, read-only, escaping, nothing fetched from
elsewhere, and a page of another origin can neither frame the dashboard nor
post to it. The SQLite run also saves the screenshots shown in docs/dashboard.md.

tests/test_dashboard.py covers the same app over HTTP in process; this file
checks what the browser shows and does.
"""

from __future__ import annotations

import contextlib
import http.server
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest
from selenium.common.exceptions import JavascriptException
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.wait import WebDriverWait

import alkstore
from tests.browser import chromium
from tests.conftest import Target

IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"
EVIL = {"x": "<script>window.__pwned=1</script>", "y": '"><img src=x onerror=window.__pwned=2>'}


@pytest.fixture(scope="module")
def browser() -> Iterator[Chrome]:
    """One headless chromium for the whole module: starting it is most of the cost."""
    with chromium() as driver:
        yield driver


@dataclass(frozen=True)
class Dashboard:
    """A served dashboard and the browser looking at it."""

    base: str
    driver: Chrome

    def open(self, path: str) -> None:
        self.driver.get(self.base + path)

    def text(self) -> str:
        return self.driver.find_element(By.TAG_NAME, "body").text

    def button(self, label: str, within: WebElement | None = None) -> WebElement:
        return (within or self.driver).find_element(By.XPATH, f".//button[normalize-space()='{label}']")

    def row(self, table: str, link: str) -> WebElement:
        """The row of table ``table`` holding a link whose text is ``link``."""
        return self.driver.find_element(
            By.XPATH, f"//table[@id='{table}']/tbody/tr[td/a[normalize-space()='{link}']]"
        )

    def cells(self, table: str, link: str) -> list[str]:
        return [td.text for td in self.row(table, link).find_elements(By.TAG_NAME, "td")]

    def rows(self, table: str) -> list[list[str]]:
        """The cells' text of each row of table ``table``."""
        rows = self.driver.find_elements(By.XPATH, f"//table[@id='{table}']/tbody/tr")
        return [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows]

    def press(self, button: WebElement, confirm: bool | None = None) -> str | None:
        """Clicks a submit button and waits for the page it leads to.

        ``confirm`` answers the confirm() dialog the button must raise (None: it
        must raise none, and the next command fails if it did). A dismissed
        dialog sends nothing, so there is no page to wait for. Returns the
        dialog's text.
        """
        self.driver.execute_script("window.__left = true")
        button.click()
        asked = None
        if confirm is not None:
            alert = WebDriverWait(self.driver, 5).until(ec.alert_is_present())
            assert alert
            asked = alert.text
            if not confirm:
                alert.dismiss()
                return asked
            alert.accept()
        self.next_page()
        return asked

    def follow(self, link: str) -> None:
        """Clicks the link whose text is ``link`` and waits for the page it leads to."""
        self.driver.execute_script("window.__left = true")
        self.driver.find_element(By.LINK_TEXT, link).click()
        self.next_page()

    def next_page(self) -> None:
        """Waits until the window marked ``__left`` holds a new page, loaded.

        Polled by script: an element command on the page being replaced can
        fail in chromedriver ("Node with given id does not belong to the
        document") instead of reporting the element stale.
        """
        WebDriverWait(self.driver, 10, ignored_exceptions=(JavascriptException,)).until(
            lambda d: d.execute_script("return !window.__left && document.readyState === 'complete'")
        )

    def fetched(self) -> list[str]:
        """Every URL the current page loaded (itself, its stylesheet, its script)."""
        return cast(
            "list[str]",
            self.driver.execute_script(
                "return performance.getEntriesByType('navigation')"
                ".concat(performance.getEntriesByType('resource')).map(e => e.name)"
            ),
        )

    def assert_local(self) -> None:
        """The page loaded its stylesheet, and nothing from anywhere but the dashboard."""
        urls = self.fetched()
        assert self.base + "/static/style.css" in urls, urls
        assert all(u.startswith(self.base + "/") for u in urls), urls

    def screenshot(self, target: Target, name: str) -> None:
        """Saves docs/images/dashboard-<name>.png; the SQLite run only, so one run makes one set.

        The viewport is set to 1280 px by the page's height (at most 900): the
        window's own size leaves an empty band under a short page.
        """
        if target.engine != "sqlite":
            return
        height = self.driver.execute_script("return Math.ceil(document.body.getBoundingClientRect().height)")
        metrics = {"width": 1280, "height": min(int(height), 900), "deviceScaleFactor": 1, "mobile": False}
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        try:
            IMAGES.mkdir(exist_ok=True)
            assert self.driver.save_screenshot(str(IMAGES / f"dashboard-{name}.png"))
        finally:
            self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@contextlib.contextmanager
def served(target: Target, log: Path, *flags: str) -> Iterator[str]:
    """Runs ``alkstore dashboard`` on ``target`` on a free port; yields its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    where = [target.location, *(["--schema", target.schema] if target.schema else [])]
    argv = [sys.executable, "-m", "alkstore", "dashboard", *where, "--port", str(port), *flags]
    base = f"http://127.0.0.1:{port}"
    # Output to a file, not a pipe nobody reads while the test runs.
    with log.open("w") as out, subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT) as proc:
        try:
            for _ in range(200):
                assert proc.poll() is None, log.read_text()
                try:
                    with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                        if r.read() == b"ok":
                            break
                except OSError:
                    time.sleep(0.05)
            else:
                pytest.fail(f"the dashboard did not answer on {base}: {log.read_text()}")
            yield base
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
    assert proc.returncode == 0, log.read_text()


def dashboard(browser: Chrome, target: Target, tmp_path: Path, *flags: str) -> Iterator[Dashboard]:
    with served(target, tmp_path / "dashboard.log", *flags) as base:
        yield Dashboard(base, browser)


@pytest.fixture
def dash(browser: Chrome, target: Target, store: alkstore.Store, tmp_path: Path) -> Iterator[Dashboard]:
    # `store` first: the command opens an existing store only.
    yield from dashboard(browser, target, tmp_path)


@pytest.fixture
def read_only(browser: Chrome, target: Target, store: alkstore.Store, tmp_path: Path) -> Iterator[Dashboard]:
    yield from dashboard(browser, target, tmp_path, "--read-only")


def dead_jobs(q: alkstore.Queue, n: int) -> list[int]:
    """``n`` jobs of ``q`` (made with max_attempts=1) that failed into the dead letters."""
    ids = q.enqueue_many([{"n": i} for i in range(n)])
    for job in q.claim_batch("w", n):
        assert job.fail(f"boom {job.payload['n']}")
    return ids


def populate(store: alkstore.Store, target: Target, stack: contextlib.ExitStack) -> int:
    """A store an operator might look at; returns the id of a dead email."""
    emails = store.queue("emails", max_attempts=1)
    reports = store.queue("reports")
    webhooks = store.queue("webhooks", max_attempts=1)
    # Work already done over the last hour, for the overview's chart: each
    # round by another handle whose clock is set back that far, and whose
    # close writes its acks into that minute.
    for ago in range(57, -1, -3):
        with target.open() as earlier:
            earlier._advance_clock(-60 * ago)
            rounds = (("emails", 12 + (ago * 7) % 11), ("reports", 1 + ago % 4), ("webhooks", 3 + ago % 6))
            for name, done in rounds:
                q = earlier.queue(name)
                q.enqueue_many([{"n": n} for n in range(done)])
                assert q.ack_batch(q.claim_batch("earlier", done)) == done
    failures = [
        ("ada@example.com", "invoice", "SMTP 550 5.1.1 <ada@example.com>: mailbox unavailable"),
        ("grace@example.org", "invoice", "SMTP 421 4.7.0 smtp.example.com: try again later"),
        ("linus@example.net", "password-reset", "TimeoutError: no answer from smtp.example.com:587 in 30 s"),
    ]
    dead = []
    for to, template, error in failures:
        dead.append(emails.enqueue({"to": to, "template": template, "locale": "en"}))
        job = emails.claim("mailer-1")
        assert job is not None and job.fail(error)
    emails.enqueue({"to": "alan@example.com", "template": "welcome", "locale": "en"})
    assert emails.claim("mailer-2") is not None
    names = ["barbara", "donald", "edsger", "frances", "john", "margaret"]
    emails.enqueue_many([{"to": f"{n}@example.com", "template": "welcome", "locale": "en"} for n in names])
    emails.enqueue_many([{"to": "team@example.com", "template": "digest"}] * 2, delay=900)

    reports.enqueue_many([{"report": "daily-sales", "format": "pdf"}, {"report": "stock", "format": "csv"}])
    reports.enqueue({"report": "monthly-close", "format": "pdf"}, delay=3600)
    reports.pause()

    webhooks.enqueue({"url": "https://hooks.example.com/orders", "event": "order.paid", "order": 1041})
    hook = webhooks.claim("hooks-1")
    assert hook is not None and hook.fail("HTTP 503 Service Unavailable from hooks.example.com")
    webhooks.enqueue({"url": "https://hooks.example.com/orders", "event": "order.paid", "order": 1042})
    assert webhooks.claim("hooks-1") is not None
    webhooks.enqueue_many(
        [{"url": "https://hooks.example.com/orders", "event": "order.shipped", "order": n} for n in range(4)]
    )

    store.schedule("nightly-sales", "@every 1d", "reports", payload={"report": "daily-sales"})
    store.schedule("hourly-digest", "@every 1h", "emails", payload={"template": "digest"})
    orders = store.stream("orders")
    for n in range(12):
        orders.publish({"order": 1030 + n, "total_cents": 1999 + 100 * n}, key=f"order-{1030 + n}")
    orders.save_offset("billing", 9)
    orders.save_offset("analytics", 12)
    store.stream("audit").publish({"who": "ops", "what": "login"})
    stack.enter_context(store.lock("nightly-backup", ttl_s=600, owner="backup@db-1"))
    return dead[0]


def test_every_page_opens_and_shows_the_store(dash: Dashboard, store: alkstore.Store, target: Target) -> None:
    with contextlib.ExitStack() as stack:
        dead = populate(store, target, stack)

        dash.open("/")
        assert dash.driver.find_element(By.TAG_NAME, "h1").text == "Queues"
        # name, pending, waiting, scheduled, processing, dead, …, state
        assert dash.cells("queues", "emails")[1:6] == ["6", "0", "2", "1", "3"]
        assert dash.cells("queues", "reports")[1:6] == ["2", "0", "1", "0", "0"]
        assert dash.cells("queues", "reports")[-1] == "paused"
        assert dash.cells("queues", "webhooks")[-1] == "running"
        # The chart: 60 minutes, a bar every third one from populate's earlier rounds.
        bars = dash.driver.find_elements(By.CSS_SELECTOR, "#completions-chart rect")
        counts = [int(str(b.get_attribute("data-count"))) for b in bars]
        assert len(counts) == 60 and sum(counts) == 487 and sum(1 for n in counts if n) == 20, counts
        tall = max(bars, key=lambda b: int(str(b.get_attribute("data-count"))))
        assert tall.size["height"] > 100, "the busiest minute fills the chart's height"
        assert dash.cells("queues", "emails")[7] == "347", "completed in the hour"
        # The stylesheet applied, from the package.
        header = dash.driver.find_element(By.TAG_NAME, "header")
        assert header.value_of_css_property("background-color") == "rgba(31, 41, 51, 1)"
        dash.assert_local()
        dash.screenshot(target, "overview")

        dash.follow("emails")
        assert dash.driver.find_element(By.CSS_SELECTOR, "p.counts").text == (
            "pending 6 · waiting 0 · scheduled 2 · processing 1 · dead 3"
        )
        live = dash.driver.find_elements(By.CSS_SELECTOR, "table#jobs tbody tr")
        assert len(live) == 9 and "mailer-2" in dash.text()
        dash.assert_local()

        dash.follow("Dead letters")
        assert len(dash.driver.find_elements(By.CSS_SELECTOR, "table#jobs tbody tr")) == 3
        assert "mailbox unavailable" in dash.cells("jobs", str(dead))[-2]
        assert dash.button("Requeue all").is_enabled() and dash.button("Purge selected").is_enabled()
        dash.assert_local()
        dash.screenshot(target, "queue")

        dash.follow(str(dead))
        assert dash.driver.find_element(By.TAG_NAME, "h1").text == f"Job {dead} dead"
        assert '"to": "ada@example.com"' in dash.driver.find_element(By.ID, "payload").text
        assert "Last error\nSMTP 550" in dash.text()
        dash.assert_local()
        dash.screenshot(target, "job")

        dash.follow("Schedules, streams, locks")
        # name, spec, zone, queue, …
        schedules = [r[:4] for r in dash.rows("schedules")]
        assert ["nightly-sales", "@every 1d", "UTC", "reports"] in schedules
        assert ["hourly-digest", "@every 1h", "UTC", "emails"] in schedules
        # stream, head, consumer, offset, lag
        streams = dash.rows("streams")
        assert ["orders", "12", "billing", "9", "3"] in streams
        assert ["orders", "12", "analytics", "12", "0"] in streams
        assert ["audit", "1", "\N{EN DASH}", "", ""] in streams  # no consumer yet
        assert [r[:2] for r in dash.rows("locks")] == [["nightly-backup", "backup@db-1"]]
        dash.assert_local()
        dash.screenshot(target, "catalog")

    dash.follow("Metrics")
    metrics = dash.text()
    assert 'alkstore_jobs{queue="emails",state="dead"} 3.0' in metrics
    assert 'alkstore_queue_paused{queue="reports"} 1.0' in metrics
    assert 'alkstore_stream_lag{consumer="billing",stream="orders"} 3.0' in metrics
    dash.open("/healthz")
    assert dash.text() == "ok"


def test_requeue_one_dead_job_and_purge_another(dash: Dashboard, store: alkstore.Store) -> None:
    q = store.queue("emails", max_attempts=1)
    first, second, third = dead_jobs(q, 3)
    dash.open("/queue?name=emails&state=dead")

    # Requeueing loses nothing, so it does not ask.
    assert dash.press(dash.button("Requeue", dash.row("jobs", str(first)))) is None
    assert "state=dead" in dash.driver.current_url
    assert [r.text.split()[0] for r in dash.driver.find_elements(By.CSS_SELECTOR, "table#jobs tbody tr")] == [
        str(third),
        str(second),
    ]
    job = q.get_job(first)
    assert job is not None and job.state == "pending" and q.stats().dead == 2
    dash.follow("Live")
    assert dash.cells("jobs", str(first))[1] == "pending"

    dash.follow("Dead letters")
    purge = dash.button("Purge", dash.row("jobs", str(second)))
    assert dash.press(purge, confirm=False) == "Delete this dead job?"
    assert q.stats().dead == 2 and dash.row("jobs", str(second)).is_displayed()
    assert dash.press(purge, confirm=True) == "Delete this dead job?"
    assert q.get_job(second) is None and q.stats().dead == 1
    assert dash.driver.find_elements(By.LINK_TEXT, str(second)) == []


def test_requeue_and_purge_the_selected_then_purge_all(dash: Dashboard, store: alkstore.Store) -> None:
    q = store.queue("emails", max_attempts=1)
    ids = dead_jobs(q, 5)
    dash.open("/queue?name=emails&state=dead")

    for job_id in ids[:2]:
        dash.driver.find_element(By.CSS_SELECTOR, f"input[type=checkbox][value='{job_id}']").click()
    asked = dash.press(dash.button("Requeue selected"), confirm=True)
    assert asked == "Apply to the selected dead jobs?"
    assert all((j := q.get_job(i)) is not None and j.state == "pending" for i in ids[:2])
    assert len(dash.driver.find_elements(By.CSS_SELECTOR, "table#jobs tbody tr")) == 3
    assert "dead 3" in dash.driver.find_element(By.CSS_SELECTOR, "p.counts").text

    dash.driver.find_element(By.CSS_SELECTOR, f"input[type=checkbox][value='{ids[2]}']").click()
    dash.press(dash.button("Purge selected"), confirm=True)
    assert q.get_job(ids[2]) is None and q.stats().dead == 2

    assert dash.press(dash.button("Purge all"), confirm=False) == "Delete every dead job of this queue?"
    assert q.stats().dead == 2
    assert len(dash.driver.find_elements(By.CSS_SELECTOR, "table#jobs tbody tr")) == 2
    dash.press(dash.button("Purge all"), confirm=True)
    assert "No dead jobs." in dash.text()
    stats = q.stats()
    assert stats.dead == 0 and stats.pending == 2, "purging the dead leaves the requeued jobs alone"


def test_pause_then_resume_a_queue(dash: Dashboard, store: alkstore.Store) -> None:
    q = store.queue("reports")
    q.enqueue({"report": "daily-sales"})
    dash.open("/queue?name=reports")

    dash.press(dash.button("Pause"))
    assert dash.driver.find_element(By.CSS_SELECTOR, "h1 .paused").text == "paused"
    assert q.is_paused()
    dash.follow("Queues")
    assert dash.cells("queues", "reports")[-1] == "paused"

    dash.follow("reports")
    dash.press(dash.button("Resume"))
    assert dash.driver.find_elements(By.CSS_SELECTOR, "h1 .paused") == []
    assert dash.button("Pause").is_displayed()
    assert not q.is_paused()
    dash.follow("Queues")
    assert dash.cells("queues", "reports")[-1] == "running"


def test_a_workflow_job_links_its_parents_and_children(
    dash: Dashboard, store: alkstore.Store, target: Target
) -> None:
    """SPEC §25: the page of a waiting job links the jobs it waits for, each of
    those links back, and a finished job with a kept result shows it."""
    extract = store.queue("extract")
    parts = extract.enqueue_many([{"table": t} for t in ("orders", "refunds", "payouts")])
    report = store.queue("report").enqueue({"kind": "weekly"}, after=parts, keep_result=3600)
    first = extract.claim("etl-1")
    assert first is not None and first.id == parts[0] and first.ack(result={"rows": 120})

    dash.open("/")
    assert dash.cells("queues", "report")[1:3] == ["0", "1"], "pending 0, waiting 1"
    dash.open(f"/job?queue=report&id={report}")
    assert dash.driver.find_element(By.TAG_NAME, "h1").text == f"Job {report} waiting"
    shown = dash.driver.find_element(By.ID, "parents").find_elements(By.TAG_NAME, "a")
    assert [a.text for a in shown] == [str(p) for p in parts]
    dash.assert_local()
    dash.screenshot(target, "workflow")

    dash.follow(str(parts[1]))
    assert dash.driver.find_element(By.TAG_NAME, "h1").text == f"Job {parts[1]} pending"
    assert "extract" in dash.text(), "found in its own queue from the id alone"
    assert [a.text for a in dash.driver.find_element(By.ID, "children").find_elements(By.TAG_NAME, "a")] == [
        str(report)
    ]
    dash.follow(str(report))
    dash.open(f"/job?id={parts[0]}")
    assert dash.driver.find_element(By.TAG_NAME, "h1").text == f"Job {parts[0]} done"
    assert '"rows": 120' in dash.driver.find_element(By.ID, "result").text


def test_cancel_a_live_job_from_its_page_and_from_the_list(dash: Dashboard, store: alkstore.Store) -> None:
    q = store.queue("emails")
    first, second, kept = q.enqueue_many([{"to": "a@example.com"}, {"to": "b@example.com"}, {}])
    claimed = q.claim("mailer-1")
    assert claimed is not None and claimed.id == first
    dash.open(f"/job?queue=emails&id={first}")
    assert dash.driver.find_element(By.TAG_NAME, "h1").text == f"Job {first} processing"

    assert dash.press(dash.button("Cancel"), confirm=True) == "Cancel this job?"
    assert q.get_job(first) is None
    assert dash.driver.find_element(By.CSS_SELECTOR, "h1 .name").text == "emails"
    assert dash.driver.find_elements(By.LINK_TEXT, str(first)) == []

    assert (
        dash.press(dash.button("Cancel", dash.row("jobs", str(second))), confirm=True) == "Cancel this job?"
    )
    assert q.get_job(second) is None and q.get_job(kept) is not None
    assert [r.text.split()[0] for r in dash.driver.find_elements(By.CSS_SELECTOR, "table#jobs tbody tr")] == [
        str(kept)
    ]


def test_a_post_with_a_wrong_token_or_no_cookie_changes_nothing(
    dash: Dashboard, store: alkstore.Store
) -> None:
    q = store.queue("emails")
    q.enqueue({})
    dash.open("/queue?name=emails")
    dash.driver.execute_script(
        "document.querySelectorAll('input[name=csrf]').forEach(i => { i.value = 'forged'; })"
    )
    dash.press(dash.button("Pause"))
    assert dash.text() == "missing or wrong CSRF token: reload the page"
    assert not q.is_paused()

    dash.open("/queue?name=emails")
    assert dash.driver.get_cookie("alkstore_csrf") is not None
    dash.driver.delete_cookie("alkstore_csrf")
    dash.press(dash.button("Pause"))
    assert dash.text() == "missing or wrong CSRF token: reload the page"
    assert not q.is_paused()

    # The same button on a fresh page works: the token was what stopped it.
    dash.open("/queue?name=emails")
    dash.press(dash.button("Pause"))
    assert q.is_paused()


def test_values_from_the_database_are_shown_as_text(dash: Dashboard, store: alkstore.Store) -> None:
    q = store.queue("emails", max_attempts=1)
    evil = q.enqueue(EVIL)
    job = q.claim("w")
    assert job is not None and job.fail("<img src=x onerror=window.__pwned=3>")
    with store.lock("backup", ttl_s=60, owner="<b onmouseover=window.__pwned=4>ops</b>"):
        for path in (f"/job?queue=emails&id={evil}", "/queue?name=emails&state=dead", "/catalog"):
            dash.open(path)
            assert dash.driver.execute_script("return window.__pwned") is None, path
            assert dash.driver.find_elements(By.CSS_SELECTOR, "main img, main b") == [], path
            scripts = dash.driver.find_elements(By.TAG_NAME, "script")
            assert [s.get_attribute("src") for s in scripts] in ([], [dash.base + "/static/confirm.js"]), path
            dash.assert_local()
            if path.startswith("/job"):
                payload = dash.driver.find_element(By.ID, "payload").text
                assert EVIL["x"] in payload and "<img src=x onerror=window.__pwned=2>" in payload
                assert "<img src=x onerror=window.__pwned=3>" in dash.text()
            elif path.startswith("/queue"):
                assert dash.cells("jobs", str(evil))[-2] == "<img src=x onerror=window.__pwned=3>"
            else:
                assert [r[:2] for r in dash.rows("locks")] == [
                    ["backup", "<b onmouseover=window.__pwned=4>ops</b>"]
                ]


def test_read_only_has_no_working_button_and_refuses_a_forged_post(
    read_only: Dashboard, store: alkstore.Store
) -> None:
    q = store.queue("emails", max_attempts=1)
    dead_jobs(q, 2)
    live = q.enqueue({})
    for path in ("/queue?name=emails", f"/job?queue=emails&id={live}", "/queue?name=emails&state=dead"):
        read_only.open(path)
        assert "read-only" in read_only.driver.find_element(By.CSS_SELECTOR, "header .engine").text
        buttons = read_only.driver.find_elements(By.TAG_NAME, "button")
        assert buttons and not any(b.is_enabled() for b in buttons), path

    # A forged POST: the browser's own form, its button re-enabled.
    read_only.driver.execute_script(
        "document.querySelectorAll('button').forEach(b => { b.disabled = false; })"
    )
    read_only.press(read_only.button("Purge all"), confirm=True)
    assert read_only.text() == "this dashboard is read-only"
    assert q.stats().dead == 2


@contextlib.contextmanager
def elsewhere(page: str, cookie: str | None = None) -> Iterator[str]:
    """Serves ``page`` from another port of 127.0.0.1 (another origin, the same site)
    on a thread, with ``Set-Cookie: cookie`` when given; yields its URL."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            if cookie is not None:
                self.send_header("Set-Cookie", cookie)
            self.end_headers()
            self.wfile.write(page.encode())

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def loaded(driver: Chrome, origin: str | None = None) -> bool:
    """Whether the current document (of the current frame) finished loading, not
    about:blank, and, when given, is of ``origin``."""
    return bool(
        driver.execute_script(
            "return document.readyState === 'complete' && location.href !== 'about:blank'"
            " && (arguments[0] === null || location.origin === arguments[0])",
            origin,
        )
    )


def test_a_page_elsewhere_cannot_frame_the_dashboard(dash: Dashboard, store: alkstore.Store) -> None:
    store.queue("emails").enqueue({})
    framed = f"{dash.base}/queue?name=emails"
    framing = f'<!doctype html><title>framing</title><iframe id="d" src="{framed}"></iframe>'
    with elsewhere(framing) as url:
        dash.driver.get(url)
        dash.driver.switch_to.frame(dash.driver.find_element(By.ID, "d"))
        try:
            WebDriverWait(dash.driver, 10, ignored_exceptions=(JavascriptException,)).until(loaded)
            shown = dash.driver.execute_script("return [location.href, document.body.innerText]")
        finally:
            dash.driver.switch_to.default_content()
    # The browser refused the response (X-Frame-Options, frame-ancestors) and shows its error page.
    assert shown[0].startswith("chrome-error://"), shown
    assert "Queue emails" not in shown[1] and "Pause" not in shown[1], shown


def test_a_form_on_another_origin_cannot_post_even_with_a_tossed_cookie(
    dash: Dashboard, store: alkstore.Store
) -> None:
    """Another port of 127.0.0.1 is the same site: its page can set the dashboard's
    CSRF cookie, then post a form carrying the value it chose."""
    q = store.queue("emails")
    q.enqueue({})
    dash.open("/queue?name=emails")  # the operator has the dashboard open: its cookie is set
    attack = (
        f'<!doctype html><title>attack</title><form id="f" method="post" action="{dash.base}/action">'
        '<input type="hidden" name="csrf" value="tossed"><input type="hidden" name="queue" value="emails">'
        '<input type="hidden" name="action" value="pause"></form>'
        '<script>document.getElementById("f").submit()</script>'
    )
    with elsewhere(attack, cookie="alkstore_csrf=tossed; Path=/; SameSite=Lax") as url:
        dash.driver.get(url)
        WebDriverWait(dash.driver, 10, ignored_exceptions=(JavascriptException,)).until(
            lambda d: loaded(d, dash.base)
        )
    tossed = dash.driver.get_cookie("alkstore_csrf")
    assert tossed is not None and tossed["value"] == "tossed", "the page elsewhere did set the cookie"
    status = dash.driver.execute_script("return performance.getEntriesByType('navigation')[0].responseStatus")
    assert (status, dash.driver.current_url) == (403, dash.base + "/action"), dash.text()
    assert not q.is_paused()
