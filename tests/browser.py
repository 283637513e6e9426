"""Debian's chromium, headless, driven by selenium through Debian's chromedriver.

Shared by the browser tests (tests/test_dashboard_browser.py, tests/test_docs_site.py):
without chromium and chromedriver on PATH they skip and say why, and under CI
(``CI`` set, or ``ALKSTORE_REQUIRE_POSTGRES=1``) they fail instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from typing import NoReturn

import pytest
from selenium import webdriver
from selenium.webdriver import Chrome
from selenium.webdriver.chrome.service import Service


def required() -> bool:
    """Whether a missing tool fails the run (CI) rather than skipping its tests."""
    ci = os.environ.get("CI", "").lower() not in {"", "0", "false"}
    return ci or os.environ.get("ALKSTORE_REQUIRE_POSTGRES") == "1"


def missing(msg: str) -> NoReturn:
    """Fails under CI, skips otherwise, with ``msg`` as the reason."""
    if required():
        pytest.fail(msg)
    pytest.skip(msg)


@contextlib.contextmanager
def chromium() -> Iterator[Chrome]:
    """A headless chromium; quit on exit."""
    binary, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or chromedriver is None:
        missing(
            "the browser tests need Debian's chromium and chromium-driver on PATH "
            "(apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    # Root in a container: no sandbox, and /dev/shm there is too small for chromium.
    # A fixed size and scale: the same layout from run to run.
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    # An explicit driver path skips Selenium Manager, which would download one;
    # SE_OFFLINE forbids it to, should it run anyway.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SE_OFFLINE", "true")
        driver = Chrome(service=Service(executable_path=chromedriver), options=options)
    try:
        yield driver
    finally:
        driver.quit()
