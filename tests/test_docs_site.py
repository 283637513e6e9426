"""The documentation site (SPEC §34, ADR 0036).

``make docs`` builds docs/ and an API reference generated from the installed
package's docstrings with mkdocs, material and mkdocstrings, in strict mode.
Here:
- the reference names every public name, and every class, function, method and
  property it shows has a docstring (read as mkdocstrings reads them: the
  compiled core's from ``_core.pyi``);
- strict mode refuses a broken link, anchor or cross-reference, a nav entry
  without a page, a page outside the nav and an object that does not exist (small
  sites that inherit mkdocs.yml, each fault once);
- the real site, built into a temporary directory and served over HTTP to
  Debian's chromium: its navigation leads to ``Queue.enqueue``'s docstring, and
  its search finds pages. Nothing is fetched from anywhere but the site.

mkdocs comes with the ``docs`` extra (the ``test`` extra repeats it). Without it,
or without chromium, these tests skip and say why; under CI they fail.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from selenium.common.exceptions import JavascriptException
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

import alkstore
from tests.browser import chromium, missing

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.MULTILINE)
SPHINX_ROLE = re.compile(r":(?:func|meth|class|mod|attr|data|exc|obj):`")
#: The public modules beside the package's own names, each on a reference page.
MODULES = [
    "alkstore.testing",
    "alkstore.metrics",
    "alkstore.dashboard",
    "alkstore.contrib.asgi",
    "alkstore.contrib.flask",
    "alkstore.contrib.django",
]


def require_docs_tools() -> None:
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module) is None:
            missing(f"the docs tests need {module}: the docs extra (make docs, or make install EXTRAS=docs)")


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``, run from the repository root."""
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config)]
    # Material's banner about MkDocs 2.0 (ADR 0036) only adds noise to a failure's output.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [*argv, "--site-dir", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def directives() -> dict[str, str]:
    """Each ``::: name`` of docs/reference/, with the page it is on."""
    found = {}
    for page in sorted(REFERENCE.glob("*.md")):
        for name in DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            found[name] = page.name
    return found


def test_the_reference_names_every_public_name() -> None:
    documented = directives()
    expected = [f"alkstore.{name}" for name in alkstore.__all__] + MODULES
    assert [name for name in expected if name not in documented] == []
    assert documented["alkstore.Queue"] == "queues.md"


def test_every_object_the_reference_shows_has_a_markdown_docstring() -> None:
    require_docs_tools()
    import griffe

    package = griffe.load("alkstore", resolve_aliases=True, resolve_external=False)

    def target(obj: griffe.Object | griffe.Alias) -> griffe.Object:
        return obj.final_target if isinstance(obj, griffe.Alias) else obj

    def shown(obj: griffe.Object) -> Iterator[griffe.Object]:
        """``obj`` and the public members the reference shows with it."""
        yield obj
        exports = obj.exports if obj.is_module else None
        names = [str(n) for n in exports] if exports is not None else list(obj.members)
        for name in names:
            if name.startswith("_"):
                continue
            member = target(obj.members[name])
            if member.is_module or (obj.is_class and member.is_class):
                continue  # on their own, or not at all
            yield from shown(member) if member.is_class else [member]

    undocumented, with_roles = [], []
    for name in directives():
        for obj in shown(target(package[name.removeprefix("alkstore.")])):
            if obj.docstring is not None and SPHINX_ROLE.search(obj.docstring.value):
                with_roles.append(obj.path)
            # A plain attribute (a dataclass field, an exception's value) is
            # described by its class; a property is not.
            if obj.is_attribute and "property" not in obj.labels:
                continue
            if obj.docstring is None or not obj.docstring.value.strip():
                undocumented.append(obj.path)
    assert undocumented == []
    # Docstrings are Markdown: a Sphinx role would show as ":meth:" before the code.
    assert with_roles == []


SMALL_INDEX = """# A small site

See [the other page](other.md#a-section) and [`backoff_range`][alkstore.backoff_range].

::: alkstore.backoff_range
"""

#: Each fault: what it adds to the small site's index page, and what the build says of it.
FAULTS = {
    "broken link": ("[gone](no-such-page.md)", "no-such-page.md"),
    "broken anchor": ("[gone](other.md#no-such-section)", "#no-such-section"),
    "broken cross-reference": ("[gone][alkstore.no_such_name]", "alkstore.no_such_name"),
    "nav entry without a page": ("", "not-written.md"),
    "page outside the nav": ("", "stray.md"),
}


def small_site(tmp_path: Path, index: str, nav: list[str], *extra: str) -> Path:
    """A site of its own pages under the repository's mkdocs.yml; returns its config."""
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    (docs / "index.md").write_text(index, encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\n## A section\n", encoding="utf-8")
    for page in extra:
        (docs / page).write_text(f"# {page}\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    entries = "".join(f"  - {page}\n" for page in nav)
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: docs\nnav:\n{entries}", encoding="utf-8")
    return config


def records(log: str) -> list[str]:
    """mkdocs' log, one string per message (a message's own lines after its first
    are indented, as the list of pages outside the nav)."""
    found: list[str] = []
    for line in log.splitlines():
        if found and (line.startswith(" ") or not line):
            found[-1] += "\n" + line
        else:
            found.append(line)
    return found


def test_strict_mode_refuses_each_fault(tmp_path: Path) -> None:
    require_docs_tools()
    clean = small_site(tmp_path / "clean", SMALL_INDEX, ["index.md", "other.md"])
    r = mkdocs_build(clean, tmp_path / "clean-site")
    assert r.returncode == 0, r.stderr
    assert "WARNING" not in r.stderr, r.stderr

    faulty = tmp_path / "faulty"
    index = SMALL_INDEX + "".join(f"\n{added}\n" for added, _ in FAULTS.values())
    config = small_site(faulty, index, ["index.md", "other.md", "not-written.md"], "stray.md")
    r = mkdocs_build(config, tmp_path / "faulty-site")
    assert r.returncode != 0, r.stderr
    warnings = [m for m in records(r.stderr) if m.startswith("WARNING")]
    for fault, (_, said) in FAULTS.items():
        # Each one a warning, which strict mode turns into a failure: an "INFO"
        # line would let the same fault through on its own.
        assert any(said in m for m in warnings), (fault, r.stderr)
    # mkdocs says why it stopped on stdout, its log on stderr.
    assert f"Aborted with {len(FAULTS)} warnings in strict mode" in r.stdout, r.stdout


def test_an_object_that_does_not_exist_fails_the_build(tmp_path: Path) -> None:
    require_docs_tools()
    config = small_site(tmp_path, SMALL_INDEX + "\n::: alkstore.no_such_name\n", ["index.md", "other.md"])
    r = mkdocs_build(config, tmp_path / "site")
    assert r.returncode != 0, r.stderr
    assert "alkstore.no_such_name" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real site, as ``make docs`` builds it, in a temporary directory."""
    require_docs_tools()
    out = tmp_path_factory.mktemp("site")
    r = mkdocs_build(ROOT / "mkdocs.yml", out)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on a free port (search needs HTTP, not file://); yields its URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Chrome]:
    with chromium() as driver:
        yield driver


def wait(driver: Chrome, what: str, condition: Callable[[Chrome], object]) -> None:
    """Polls ``condition`` until it holds, for 10 s at most; ``what`` names it in the failure."""
    WebDriverWait(driver, 10, ignored_exceptions=(JavascriptException,)).until(condition, what)


def visible(driver: Chrome, css: str, text: str) -> WebElement:
    """The one displayed element matching ``css`` whose text is ``text``."""
    found = [e for e in driver.find_elements(By.CSS_SELECTOR, css) if e.is_displayed() and e.text == text]
    assert len(found) == 1, (css, text, [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)])
    return found[0]


#: Whether the window marked ``__left`` holds a new page, loaded.
LOADED = "return !window.__left && document.readyState === 'complete'"


def follow(driver: Chrome, link: WebElement) -> None:
    """Clicks ``link`` and waits for the page it leads to."""
    driver.execute_script("window.__left = true")
    link.click()
    wait(driver, "the next page", lambda d: d.execute_script(LOADED))


def local_only(driver: Chrome, base: str) -> None:
    """The page loaded nothing from anywhere but the site (no web fonts, no CDN)."""
    urls = driver.execute_script(
        "return performance.getEntriesByType('navigation')"
        ".concat(performance.getEntriesByType('resource')).map(e => e.name)"
    )
    assert urls and all(u.startswith(base + "/") for u in urls), urls


def test_the_navigation_leads_to_the_api_page_of_queue_enqueue(served: str, browser: Chrome) -> None:
    browser.get(served + "/")
    assert browser.title.startswith("alkstore"), browser.title
    # The home page takes the README's quickstart through the snippets extension.
    article = browser.find_element(By.CSS_SELECTOR, "article").text
    assert 'emails.enqueue({"to": "ada@example.com"}, tx=tx)' in article, article
    local_only(browser, served)

    follow(browser, visible(browser, ".md-tabs__link", "API reference"))
    follow(browser, visible(browser, ".md-sidebar--primary .md-nav__link", "Queues and jobs"))
    assert browser.current_url == served + "/reference/queues/", browser.current_url
    local_only(browser, served)

    # The page's table of contents lists the members; Queue.enqueue's entry jumps to it.
    toc = browser.find_element(By.CSS_SELECTOR, '.md-sidebar--secondary a[href="#alkstore.Queue.enqueue"]')
    assert toc.text == "enqueue"
    toc.click()
    wait(
        browser,
        "the jump to #alkstore.Queue.enqueue",
        lambda d: d.current_url.endswith("#alkstore.Queue.enqueue"),
    )
    heading = browser.find_element(By.ID, "alkstore.Queue.enqueue")
    doc = heading.find_element(By.XPATH, "following-sibling::div[contains(@class, 'doc-contents')]")
    # The docstring of _core.pyi, with its parameters as a table.
    assert "Adds one job to the queue; returns its id." in doc.text, doc.text
    params = [cell.text for cell in doc.find_elements(By.CSS_SELECTOR, "table tbody tr td:first-child code")]
    for name in ("payload", "delay", "run_at", "unique_key", "after", "tx", "conn"):
        assert name in params, params
    signature = heading.find_element(By.XPATH, "following-sibling::div[contains(@class, 'doc-signature')]")
    assert "delay: _Duration | None = None" in signature.text, signature.text


#: Each search hit's link, text and highlighted words, read in one script: the list
#: is rendered again as the worker answers, so element references go stale.
HITS = """return [...document.querySelectorAll('.md-search-result__link')].map(a => ({
    href: a.href, text: a.innerText, marked: [...a.querySelectorAll('mark')].map(m => m.textContent)
}))"""


def hits(driver: Chrome) -> list[dict[str, Any]]:
    return cast("list[dict[str, Any]]", driver.execute_script(HITS))


def search(driver: Chrome, query: str, wanted: Callable[[dict[str, Any]], bool]) -> int:
    """Types ``query`` into the search box; returns the index of the first hit that is ``wanted``."""
    box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
    box.click()
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(query)
    # The index loads in a web worker; the hits come when it is ready.
    wait(driver, f"a search hit for {query!r}", lambda d: any(wanted(h) for h in hits(d)))
    return next(i for i, h in enumerate(hits(driver)) if wanted(h))


def test_the_search_finds_pages(served: str, browser: Chrome) -> None:
    browser.get(served + "/")
    found = search(
        browser,
        "dead letter",
        lambda h: (
            h["href"].startswith(served + "/queues/")
            and bool({"dead", "letter", "letters"} & {m.lower() for m in h["marked"]})
        ),
    )
    assert "dead" in hits(browser)[found]["text"].lower()

    # The API reference is searched too: a method's name finds its entry, and the hit opens it.
    found = search(browser, "enqueue_many", lambda h: h["href"].endswith("#alkstore.Queue.enqueue_many"))
    href = hits(browser)[found]["href"]
    browser.execute_script(
        "window.__left = true; document.querySelectorAll('.md-search-result__link')[arguments[0]].click()",
        found,
    )
    wait(browser, "the page of the hit", lambda d: d.current_url == href and d.execute_script(LOADED))
    assert browser.current_url.startswith(served + "/reference/queues/")
    heading = browser.find_element(By.ID, "alkstore.Queue.enqueue_many")
    assert heading.text.startswith("enqueue_many"), heading.text
