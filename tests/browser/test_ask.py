"""The chat page in a real headless Chromium: ask, watch the run arrive, cancel it.

The statuses the page lists must be the run's feed exactly (no status twice, none missing), and
the answer it shows the one the run published, both as the API tells them afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.api._serve import Served, read_all
from tests.browser._proxy import proxied
from tests.browser.conftest import ANN, KEYS, SUCCESS_QUESTION, Console, console_errors, wait
from tests.browser.test_run_endings import QUESTION, _scripted


def _ask(browser: WebDriver, base: str, question: str, key: str | None) -> str:
    """Open the chat page, type the key (if any) and the question, and ask; returns the run id."""
    browser.get(f"{base}/console/ask")
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser).until(lambda d: body.get_attribute("data-loaded") == "ask")
    if key is not None:
        browser.find_element(By.ID, "key-input").send_keys(key)
        browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
    browser.find_element(By.ID, "query").send_keys(question)
    browser.find_element(By.ID, "ask-button").click()
    return str(wait(browser).until(lambda d: body.get_attribute("data-run-id")))


def _statuses(browser: WebDriver) -> list[str]:
    found = browser.execute_script(
        "return [...document.querySelectorAll('#statuses li')].map(li => li.dataset.status);"
    )
    return [str(status) for status in found]


def test_a_question_asked_on_the_page_streams_its_statuses_and_answer(
    browser: WebDriver, console: Console
) -> None:
    run_id = _ask(browser, console.base, SUCCESS_QUESTION, KEYS[ANN])
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser).until(lambda d: body.get_attribute("data-live") == "ended")
    assert body.get_attribute("data-outcome") == "SUCCESS"
    feed = read_all(console.clients[ANN], "GET", f"/v1/runs/{run_id}/stream")
    assert _statuses(browser) == [e.data["status"] for e in feed if e.event == "status"]
    run = console.api(ANN, f"/v1/runs/{run_id}")
    shown = browser.find_element(By.CSS_SELECTOR, "#answer .published").text
    assert shown == run["published_result"]["conclusion"]
    assert browser.find_element(By.ID, "ending").text == "Released: SUCCESS"
    assert browser.find_element(By.ID, "cancel").get_attribute("disabled") is not None
    assert console_errors(browser) == []


@pytest.fixture
def hanging(tmp_path: Path) -> Iterator[Served]:
    """A service whose search_logs hangs (the cancel scenario), with no keys."""
    yield from _scripted(tmp_path, "paths/cancel_during_tool.yaml")


def test_the_cancel_button_cancels_the_run_on_the_page(browser: WebDriver, hanging: Served) -> None:
    base = str(hanging.client.base_url).rstrip("/")
    run_id = _ask(browser, base, QUESTION, None)
    tool = hanging.app.state.worker.dispatcher.service.tools["search_logs"]
    assert tool.hanging.wait(timeout=60)  # the run is inside its tool call
    browser.find_element(By.ID, "cancel").click()
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser).until(lambda d: body.get_attribute("data-live") == "ended")
    assert body.get_attribute("data-outcome") == "CANCELLED"
    ending = browser.find_element(By.ID, "ending").text
    assert ending == "Nothing published: CANCELLED (CANCELLED: USER_REQUESTED)"
    row = hanging.client.get(f"/v1/runs/{run_id}").json()
    assert (row["termination_state"], row["termination_reason"]) == ("CANCELLED", "USER_REQUESTED")
    assert console_errors(browser) == []


def test_after_a_dropped_connection_the_page_resumes_with_no_status_twice_or_missing(
    browser: WebDriver, hanging: Served
) -> None:
    with proxied(str(hanging.client.base_url).rstrip("/")) as (base, proxy):
        run_id = _ask(browser, base, QUESTION, None)
        tool = hanging.app.state.worker.dispatcher.service.tools["search_logs"]
        assert tool.hanging.wait(timeout=60)
        body = browser.find_element(By.TAG_NAME, "body")
        wait(browser).until(lambda d: body.get_attribute("data-live") == "following")
        wait(browser).until(lambda d: "DIAGNOSIS_RUNNING" in _statuses(d))  # the backlog is in
        proxy.drop()  # the page's stream is cut mid-run
        wait(browser).until(
            lambda d: (
                body.get_attribute("data-reconnects") == "1"
                and body.get_attribute("data-live") == "following"
            )
        )
        assert hanging.client.post(f"/v1/runs/{run_id}/cancel").json()["cancelled"] is True
        wait(browser).until(lambda d: body.get_attribute("data-live") == "ended")
        feed = read_all(hanging.client, "GET", f"/v1/runs/{run_id}/stream")
        assert _statuses(browser) == [e.data["status"] for e in feed if e.event == "status"]
        assert body.get_attribute("data-outcome") == "CANCELLED"
