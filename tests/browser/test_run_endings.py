"""Runs that end otherwise — cancelled, timed out, with a rejected tool request — in the browser.

Each scenario runs on a service of its own (a scripted model plays one scenario at a time) with no
keys: the console then works for the local user without one. The run page's lanes are compared
with the run's trace, and the cancel or the deadline is marked on the picture.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from infrastructure.settings import Settings
from tests.api._serve import Served, read_all, served_client
from tests.browser._lanes import expected_lanes
from tests.browser.conftest import console_errors, wait
from tests.browser.test_console import lanes_drawn

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"


def _scripted(folder: Path, scenario: str) -> Iterator[Served]:
    settings = Settings(
        database_url=f"sqlite:///{folder / 'harness.db'}",
        model=f"scripted:{SCENARIOS / scenario}",
    )
    with served_client(settings) as served:
        try:
            yield served
        finally:
            for tool in served.app.state.worker.dispatcher.service.tools.values():
                getattr(tool, "release", lambda: None)()  # a hung scripted tool answers, late


@pytest.fixture
def cancelled(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    """A run cancelled (USER_REQUESTED, over HTTP) while its tool hangs."""
    for served in _scripted(tmp_path, "paths/cancel_during_tool.yaml"):
        client = served.client
        run_id = client.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]
        tool = served.app.state.worker.dispatcher.service.tools["search_logs"]
        assert tool.hanging.wait(timeout=60)  # the tool is running: cancel now
        assert client.post(f"/v1/runs/{run_id}/cancel").json()["cancelled"] is True
        feed = read_all(client, "GET", f"/v1/runs/{run_id}/stream")
        assert feed[-1].event == "failure", feed
        yield served, run_id


def _asked(tmp_path: Path, scenario: str) -> Iterator[tuple[Served, str]]:
    for served in _scripted(tmp_path, scenario):
        feed = read_all(served.client, "POST", "/v1/chat", json={"query": QUESTION})
        yield served, str(feed[0].data["run_id"])


@pytest.fixture
def timed_out(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    """A run whose model never answers: its 0.5 s deadline ends it."""
    yield from _asked(tmp_path, "timed_out.yaml")


@pytest.fixture
def rejected(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    """A run whose model asks for a tool that could change the system (refused in preflight)."""
    yield from _asked(tmp_path, "paths/reject_not_read_only.yaml")


def open_run(browser: WebDriver, served: Served, run_id: str) -> list[tuple[str, str, str]]:
    """Open the run's page (no key needed: the service has none) and check its lanes."""
    base = str(served.client.base_url).rstrip("/")
    browser.get(f"{base}/console/runs/{run_id}")
    loaded = wait(browser).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded")
    )
    assert loaded == "run", browser.find_element(By.ID, "message").text
    drawn = lanes_drawn(browser)
    assert drawn == expected_lanes(served.client.get(f"/v1/runs/{run_id}/trace").json()["data"])
    assert console_errors(browser) == []
    return drawn


def markers(browser: WebDriver) -> dict[str, str]:
    """The vertical markers of the picture: kind -> label."""
    found = browser.find_elements(By.CSS_SELECTOR, "#timeline svg g.marker")
    return {
        m.get_attribute("data-marker") or "": m.find_element(By.TAG_NAME, "text").text
        for m in found
    }


def test_a_cancelled_run_is_marked_where_the_cancel_came(
    browser: WebDriver, cancelled: tuple[Served, str]
) -> None:
    served, run_id = cancelled
    drawn = open_run(browser, served, run_id)
    states = {key: state for key, _, state in drawn}
    assert states["termination"] == "CANCELLED · USER_REQUESTED"
    assert markers(browser) == {"cancel": "cancel: USER_REQUESTED"}
    assert (
        browser.find_element(By.CSS_SELECTOR, "#summary .outcome").text
        == "Cancelled (USER_REQUESTED)"
    )
    base = str(served.client.base_url).rstrip("/")
    browser.get(f"{base}/console")
    wait(browser).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "runs"
    )
    outcome = browser.find_element(By.CSS_SELECTOR, f"tr[data-run-id='{run_id}'] .outcome")
    assert (outcome.text, outcome.get_attribute("data-tone")) == (
        "Cancelled (USER_REQUESTED)",
        "cancelled",
    )


def test_a_timed_out_run_shows_its_deadline(
    browser: WebDriver, timed_out: tuple[Served, str]
) -> None:
    served, run_id = timed_out
    drawn = open_run(browser, served, run_id)
    assert {key: state for key, _, state in drawn}["termination"] == "TIMED_OUT · DEADLINE_EXCEEDED"
    assert markers(browser)["deadline"] == "deadline"
    assert (
        browser.find_element(By.CSS_SELECTOR, "#summary .outcome").text
        == "Failed (TIMED_OUT: DEADLINE_EXCEEDED)"
    )


def test_a_rejected_tool_request_has_a_rejected_lane(
    browser: WebDriver, rejected: tuple[Served, str]
) -> None:
    served, run_id = rejected
    drawn = open_run(browser, served, run_id)
    tools = [
        (label, state) for key, label, state in drawn if key.startswith(("tool-", "rejected-"))
    ]
    assert tools == [("tool restart_service", "REJECTED")]


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    """A run whose tool hangs (until the run is cancelled, or the test ends)."""
    for served in _scripted(tmp_path, "paths/cancel_during_tool.yaml"):
        run_id = served.client.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]
        tool = served.app.state.worker.dispatcher.service.tools["search_logs"]
        assert tool.hanging.wait(timeout=60)
        worker = served.app.state.worker  # the read tables hold the invocation's start
        assert worker.projector.wait_for(served.store.head(), 60)
        yield served, run_id


def test_the_page_of_a_running_run_follows_it_to_its_end(
    browser: WebDriver, running: tuple[Served, str]
) -> None:
    served, run_id = running
    base = str(served.client.base_url).rstrip("/")
    browser.get(f"{base}/console/runs/{run_id}")
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser).until(lambda d: body.get_attribute("data-live") == "following")
    assert outcome_shown(browser) == ("Running", "running")
    tools = [s for k, _, s in lanes_drawn(browser) if k.startswith("tool-")]
    assert tools == ["STARTED"]  # the hanging invocation, drawn as it stands
    assert served.client.post(f"/v1/runs/{run_id}/cancel").json()["cancelled"] is True
    wait(browser).until(lambda d: body.get_attribute("data-live") == "ended")
    wait(browser).until(lambda d: outcome_shown(d)[0] == "Cancelled (USER_REQUESTED)")
    trace = served.client.get(f"/v1/runs/{run_id}/trace").json()["data"]
    assert lanes_drawn(browser) == expected_lanes(trace)  # the page redrew itself, no reload
    assert browser.execute_script("return performance.getEntriesByType('navigation').length") == 1
    assert console_errors(browser) == []


def outcome_shown(browser: WebDriver) -> tuple[str, str]:
    """The summary's outcome words and tone, read at one instant (the page redraws live)."""
    found = browser.execute_script(
        "const o = document.querySelector('#summary .outcome');"
        "return o ? [o.textContent, o.dataset.tone] : ['', ''];"
    )
    return str(found[0]), str(found[1])
