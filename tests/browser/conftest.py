"""Fixtures of the browser tests: a real service over uvicorn, and a real headless Chromium.

The service is the app on a fresh SQLite file with the sample data and the offline model, served
by uvicorn on a loopback port (``tests/api/_serve.py``); two users have keys. Chromium and its
driver are Debian's ``chromium`` and ``chromium-driver`` (``scripts/test`` installs them). The
browser resolves no host but 127.0.0.1, so a page that reached for the network would fail. Every
test leaves a screenshot in ``test-artifacts/screenshots/`` (kept by CI, ignored by git).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from infrastructure.settings import ApiKey, Settings
from tests.api._serve import read_all, served_client

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
WAIT = 30.0
"""How long a test waits for the page to reach a state (a condition on the DOM, never a sleep)."""

ANN, BOB = "ann", "bob"
KEYS = {ANN: "ann-user-key-4c1d7e9a0b2f8e63", BOB: "bob-user-key-7a2e5c0d9f1b3846"}
SUCCESS_QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"
FALLBACK_QUESTION = "Why was checkout slow on 2025-01-01?"


@dataclass(frozen=True)
class Console:
    """The running service: its base URL, an API client per user, and ann's two finished runs."""

    base: str
    clients: dict[str, httpx.Client]
    success_run: str
    fallback_run: str
    database_url: str = ""
    """The service's store, for a command line to act on it beside the service."""

    def api(self, user: str, path: str) -> Any:
        """GET ``path`` as ``user`` and return its JSON (asserting a 200)."""
        response = self.clients[user].get(path)
        assert response.status_code == 200, response.text
        return response.json()


def _ask(client: httpx.Client, question: str) -> str:
    feed = read_all(client, "POST", "/v1/chat", json={"query": question})
    assert feed[-1].event == "done", feed
    return str(feed[0].data["run_id"])


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """The service with ann's and bob's keys, and ann's SUCCESS and FALLBACK runs (via the API)."""
    folder = tmp_path_factory.mktemp("console")
    keys = [ApiKey(key=SecretStr(key), name=name, role="user") for name, key in KEYS.items()]
    settings = Settings(database_url=f"sqlite:///{folder / 'harness.db'}", api_keys=keys)
    with served_client(settings) as served:
        base = str(served.client.base_url).rstrip("/")
        clients = {
            name: httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"})
            for name, key in KEYS.items()
        }
        try:
            success = _ask(clients[ANN], SUCCESS_QUESTION)
            fallback = _ask(clients[ANN], FALLBACK_QUESTION)
            yield Console(base, clients, success, fallback, settings.database_url)
        finally:
            for client in clients.values():
                client.close()


def _options() -> webdriver.ChromeOptions:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the tests run as root in CI
        "--disable-dev-shm-usage",
        "--window-size=1280,800",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return options


@pytest.fixture
def browser(request: pytest.FixtureRequest) -> Iterator[WebDriver]:
    """A fresh headless Chromium; a screenshot of the page is saved when the test ends."""
    for needed in (CHROMIUM, CHROMEDRIVER):
        if not os.access(needed, os.X_OK):
            pytest.fail(
                f"{needed} is missing: run scripts/test (it installs chromium and chromium-driver)"
            )
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not look for a browser
    driver = webdriver.Chrome(options=_options(), service=Service(str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        width = driver.get_window_size()["width"]
        driver.set_window_size(width, max(800, min(int(height or 800), 6000)))  # the whole page
        name = re.sub(r"[^A-Za-z0-9_.\[\]-]+", "_", request.node.name)
        assert driver.save_screenshot(str(SCREENSHOTS / f"{name}.png")), name
        driver.quit()


def wait(driver: WebDriver) -> WebDriverWait[WebDriver]:
    """A wait on a DOM condition; an element a redraw replaced meanwhile is looked at again."""
    return WebDriverWait(driver, WAIT, ignored_exceptions=(StaleElementReferenceException,))


def requested_urls(driver: WebDriver) -> dict[str, str]:
    """Every URL the browser asked for since the last call (from its performance log).

    Each maps to why the browser itself stopped it before it left ("csp": the page's
    Content-Security-Policy), or to "" when it was sent.
    """
    urls: dict[str, str] = {}
    ids: dict[str, str] = {}
    for entry in driver.get_log("performance"):  # type: ignore[no-untyped-call]
        message = json.loads(entry["message"])["message"]
        params = message["params"]
        if message["method"] == "Network.requestWillBeSent":
            urls[params["request"]["url"]] = ""
            ids[params["requestId"]] = params["request"]["url"]
        elif message["method"] == "Network.loadingFailed" and params.get("blockedReason"):
            urls[ids[params["requestId"]]] = params["blockedReason"]
    return urls


def console_errors(driver: WebDriver, *, allow_http_errors: bool = False) -> list[str]:
    """The page's console errors; with ``allow_http_errors``, not those of refused requests."""
    logged = driver.get_log("browser")  # type: ignore[no-untyped-call]
    found = [e["message"] for e in logged if e["level"] == "SEVERE"]
    if allow_http_errors:
        found = [m for m in found if "Failed to load resource" not in m]
    return found
