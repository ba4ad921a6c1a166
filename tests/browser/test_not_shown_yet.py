"""The run page of a run the read tables do not show yet says so, never that it does not exist.

The service is the one of ``tests/api/test_not_shown_yet.py``: the test is its projection
process, so the run stays unprojected until the test catches the read tables up.
"""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.api.test_not_shown_yet import KEYS, lagging
from tests.browser.conftest import console_errors, wait


def _load(browser: WebDriver, url: str) -> str:
    """Open ``url`` with ann's key in this tab; what the page ended in (``data-loaded``)."""
    browser.get(url)
    browser.execute_script("sessionStorage.setItem('harness.apiKey', arguments[0])", KEYS["ann"])
    browser.refresh()
    body = browser.find_element(By.TAG_NAME, "body")
    return str(wait(browser).until(lambda d: body.get_attribute("data-loaded")))


def _message(browser: WebDriver) -> str:
    shown = browser.find_element(By.ID, "message")
    return shown.text if shown.is_displayed() else ""


def test_a_run_not_shown_yet_asks_for_a_refresh_and_shows_once_projected(
    browser: WebDriver, tmp_path: Path
) -> None:
    with lagging(tmp_path) as server:
        base = str(server.client.base_url).rstrip("/")
        run_id = server.start("ann")

        assert _load(browser, f"{base}/console/runs/{run_id}") == "error"
        said = _message(browser)
        assert said.startswith(f"Not shown yet — refresh: the service has run {run_id},"), said
        assert "Refresh the page in a second." in said
        assert "does not exist" not in said
        assert browser.find_element(By.ID, "run").is_displayed() is False

        assert _load(browser, f"{base}/console/runs/{uuid4()}") == "error"
        assert "it does not exist, or it belongs to another user" in _message(browser)

        server.catch_up()
        assert _load(browser, f"{base}/console/runs/{run_id}") == "run"
        assert _message(browser) == ""
        assert browser.find_element(By.ID, "title").text == "Why was checkout slow on 2026-11-29?"
        assert console_errors(browser, allow_http_errors=True) == []
