"""The console's operator views in a real headless Chromium: the intent filter, the Overview's
charts, and the System page's workers and audit verification (see ``conftest.py``).

A service of its own with a user's (ann), an auditor's (audrey) and an admin's (adam) key, and
three runs of ann's: a published diagnosis, a fallback, and a chat. What a page draws is read
back from its SVG and compared with the API's own answer.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from sqlalchemy import Engine

from api.auth import Role
from infrastructure.settings import ApiKey, Settings
from tests.api._serve import read_all, served_client
from tests.browser.conftest import FALLBACK_QUESTION, SUCCESS_QUESTION, console_errors, wait
from tests.browser.test_usable import UNNAMED
from tests.helpers import tampered_routing_decision

ROLES: dict[str, Role] = {"ann": "user", "audrey": "auditor", "adam": "admin"}
KEYS = {name: f"{name}-{role}-key-3e1f0a9b8c7d6e5f" for name, role in ROLES.items()}
CHAT_QUESTION = "hello there"


@dataclass(frozen=True)
class Service:
    """The running service, an API client per key, and the engine of its SQLite file."""

    base: str
    clients: dict[str, httpx.Client]
    engine: Engine

    def api(self, user: str, method: str, path: str) -> Any:
        """``method path`` as ``user``; its JSON (asserting a 200)."""
        response = self.clients[user].request(method, path)
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("operators")
    keys = [ApiKey(key=SecretStr(KEYS[n]), name=n, role=r) for n, r in ROLES.items()]
    settings = Settings(database_url=f"sqlite:///{folder / 'harness.db'}", api_keys=keys)
    with served_client(settings) as served:
        base = str(served.client.base_url).rstrip("/")
        clients = {
            name: httpx.Client(
                base_url=base, timeout=60, headers={"Authorization": f"Bearer {key}"}
            )
            for name, key in KEYS.items()
        }
        try:
            for question in (SUCCESS_QUESTION, FALLBACK_QUESTION, CHAT_QUESTION):
                feed = read_all(clients["ann"], "POST", "/v1/chat", json={"query": question})
                assert feed[-1].event == "done", feed
            yield Service(base, clients, served.app.state.worker.engine)
        finally:
            for client in clients.values():
                client.close()


def loaded(browser: WebDriver, attribute: str = "data-loaded") -> str:
    """Wait until the page's body says it has loaded (or failed); what it says."""
    body = browser.find_element(By.TAG_NAME, "body")
    return str(wait(browser).until(lambda d: body.get_attribute(attribute)))


def open_as(browser: WebDriver, url: str, user: str) -> str:
    """Open ``url`` with ``user``'s key in the tab (as typed into the key box before); its state."""
    browser.get(url)
    loaded(browser)
    browser.execute_script("sessionStorage.setItem('harness.apiKey', arguments[0])", KEYS[user])
    browser.refresh()
    state = loaded(browser)
    assert KEYS[user] not in browser.current_url
    return state


def shown(browser: WebDriver, element_id: str) -> str:
    """The text of an element, empty when it is hidden."""
    found = browser.find_element(By.ID, element_id)
    return found.text if found.is_displayed() else ""


def test_the_runs_page_filters_by_intent(browser: WebDriver, service: Service) -> None:
    assert open_as(browser, f"{service.base}/console", "ann") == "runs"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr[data-run-id]")) == 3
    for intent, count in (("SYSTEM_CHAT", 1), ("DIAGNOSIS", 2), ("KNOWLEDGE_QUERY", 0)):
        Select(browser.find_element(By.NAME, "intent")).select_by_visible_text(intent)
        browser.execute_script("document.body.dataset.loaded = ''")
        browser.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
        wanted = f"intent={intent}"
        wait(browser).until(lambda d: wanted in d.current_url)  # noqa: B023 (waited on at once)
        assert loaded(browser) == "runs"
        rows = browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr[data-run-id]")
        listed = service.api("ann", "GET", f"/v1/runs?intent={intent}")["data"]
        assert [r.get_attribute("data-run-id") for r in rows] == [r["run_id"] for r in listed]
        assert len(rows) == count
        assert {r.find_elements(By.TAG_NAME, "td")[2].text for r in rows} <= {intent}
        assert Select(browser.find_element(By.NAME, "intent")).first_selected_option.text == intent
    assert "No runs match." in browser.find_element(By.ID, "runs").text
    assert console_errors(browser, allow_http_errors=True) == []  # the keyless first look: 401


NO_SIDEWAYS_SCROLL = "return document.documentElement.scrollWidth <= window.innerWidth"
DRAWN_SEGMENTS = """
return [...document.querySelectorAll('#runs-figure svg rect.segment')].map(r =>
  [r.dataset.day, r.dataset.outcome, Number(r.dataset.runs), Number(r.getAttribute('height'))]);
"""
DRAWN_LATENCY = """
return [...document.querySelectorAll('#latency-figure svg g.group')].map(g =>
  [g.dataset.group, ...[...g.querySelectorAll('rect.percentile')].map(r =>
    [r.dataset.percentile, Number(r.dataset.ms), Number(r.getAttribute('width'))])]);
"""


def test_the_overview_draws_the_daily_totals_the_route_gives(
    browser: WebDriver, service: Service
) -> None:
    assert open_as(browser, f"{service.base}/console/overview", "audrey") == "overview"
    daily = service.api("audrey", "GET", "/v1/stats/daily")
    expected: dict[tuple[str, str], int] = defaultdict(int)
    for row in daily["data"]:
        expected[(row["day"], row["release_outcome"])] += row["runs"]
    segments = browser.execute_script(DRAWN_SEGMENTS)
    assert {(day, outcome): runs for day, outcome, runs, _ in segments} == dict(expected)
    assert sorted(expected.values()) == [
        1,
        2,
    ]  # today: 2 SUCCESS (the diagnosis, the chat), 1 FALLBACK
    per_run = float(
        browser.find_element(By.CSS_SELECTOR, "#runs-figure svg").get_attribute("data-per-run") or 0
    )
    assert [round(height, 6) for *_, height in segments] == [
        round(runs * per_run, 6) for _, _, runs, _ in segments
    ]  # one scale: a bar twice as many runs is twice as tall
    days = browser.find_elements(By.CSS_SELECTOR, "#runs-figure svg g.day")
    assert [d.get_attribute("data-day") for d in days][-1] == daily["last_day"]
    assert len(days) == 14  # every day of the range has its slot, empty or not
    latency = browser.execute_script(DRAWN_LATENCY)
    assert len(latency) == daily["count"] == 3
    scale = float(
        browser.find_element(By.CSS_SELECTOR, "#latency-figure svg").get_attribute("data-px-per-ms")
        or 0
    )
    for (_, *bars), row in zip(latency, daily["data"], strict=True):
        assert {p: ms for p, ms, _ in bars} == {
            "p50": row["duration_p50_ms"],
            "p95": row["duration_p95_ms"],
        }
        assert all(abs(width - ms * scale) < 1e-6 for _, ms, width in bars)
    assert browser.execute_script(UNNAMED) == []  # every control has a name
    browser.set_window_size(390, 844)  # a narrow screen: the charts shrink to fit
    assert browser.execute_script(NO_SIDEWAYS_SCROLL)
    browser.set_window_size(1280, 800)  # the screenshot at the desktop size
    assert console_errors(browser, allow_http_errors=True) == []  # the keyless first look: 401


DRAWN_FALLBACKS = """
return [...document.querySelectorAll('#fallbacks-figure svg rect.segment')].map(r =>
  [r.dataset.day, r.dataset.reason, Number(r.dataset.runs)]);
"""
DRAWN_TOOL_ERRORS = """
return [...document.querySelectorAll('#tool-errors-figure svg rect.rate')].map(r =>
  [r.dataset.day, r.dataset.tool, Number(r.dataset.calls), Number(r.dataset.errors),
   Number(r.dataset.rate), Number(r.getAttribute('height'))]);
"""


def test_the_overview_draws_fallback_reasons_and_tool_error_rates_the_routes_give(
    browser: WebDriver, service: Service
) -> None:
    assert open_as(browser, f"{service.base}/console/overview", "audrey") == "overview"
    daily = service.api("audrey", "GET", "/v1/stats/daily")
    reasons: dict[tuple[str, str], int] = defaultdict(int)
    for row in daily["data"]:
        if row["release_outcome"] == "FALLBACK":
            reasons[(row["day"], row["fallback_type"])] += row["runs"]
    drawn = browser.execute_script(DRAWN_FALLBACKS)
    assert {(day, reason): runs for day, reason, runs in drawn} == dict(reasons)
    assert sum(reasons.values()) == 1  # ann's one fallback
    tools = service.api("audrey", "GET", "/v1/stats/tools")
    calls: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in tools["data"]:
        entry = calls[(row["day"], row["tool"])]
        entry[0] += row["calls"]
        entry[1] += row["calls"] if row["outcome"] == "ERROR" else 0
    bars = browser.execute_script(DRAWN_TOOL_ERRORS)
    assert {(d, t): [c, e] for d, t, c, e, *_ in bars} == dict(calls)
    assert sum(c for _, _, c, *_ in bars) > 0  # the diagnosis called its tools
    for _, _, calls_drawn, errors, rate, height in bars:
        assert rate == errors / calls_drawn and height == rate * 160  # one scale: 0 to 100%
    assert tools["first_day"] == daily["first_day"] and tools["last_day"] == daily["last_day"]
    assert not browser.find_element(By.ID, "tools-message").is_displayed()
    assert console_errors(browser, allow_http_errors=True) == []  # the keyless first look: 401


def test_a_user_is_told_the_overview_and_the_operators_views_are_not_theirs(
    browser: WebDriver, service: Service
) -> None:
    assert open_as(browser, f"{service.base}/console/overview", "ann") == "error"
    said = shown(browser, "message")
    assert "Your key may not do this: read the daily totals" in said
    assert "run_daily has no owner column" in said
    assert not browser.find_element(By.ID, "charts").is_displayed()
    assert open_as(browser, f"{service.base}/console/system", "ann") == "system"
    assert "auditors and admins only" in shown(browser, "workers-message")
    assert not browser.find_element(By.ID, "workers").is_displayed()
    browser.find_element(By.ID, "verify").click()
    assert loaded(browser, "data-verified") == "error"
    assert "Your key may not do this: verify the log" in shown(browser, "verify-message")
    assert not browser.find_element(By.ID, "verify-report").is_displayed()
    assert console_errors(browser, allow_http_errors=True) == []  # the refused requests' 403s


def test_the_system_page_lists_the_workers_and_verifies_the_log_on_demand(
    browser: WebDriver, service: Service
) -> None:
    assert open_as(browser, f"{service.base}/console/system", "adam") == "system"
    leases = service.api("audrey", "GET", "/v1/workers")["data"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#workers tbody tr")
    assert [(r.get_attribute("data-worker"), r.get_attribute("data-state")) for r in rows] == [
        (lease["worker_id"], lease["state"]) for lease in leases
    ]
    (mine,) = [r for r in rows if r.find_elements(By.TAG_NAME, "td")[2].text == str(os.getpid())]
    assert mine.get_attribute("data-state") == "LIVE"
    assert browser.execute_script(UNNAMED) == []  # every control has a name
    assert _verify(browser) == "true"
    summary = shown(browser, "verify-summary")
    assert summary.startswith("Clean: ") and summary.endswith("no violations.")
    assert "3 runs (3 finished" in summary
    checks = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#verify-checks li")]
    assert any(c.startswith("read tables agree with the log") for c in checks)
    assert not browser.find_element(By.ID, "violations").is_displayed()
    with tampered_routing_decision(service.engine) as position:
        assert _verify(browser) == "false"
        said = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#violations li")]
        reported = [v["text"] for v in _report(service)["violations"]]
    assert said == reported  # every violation, in the words the CLI prints
    summary = shown(browser, "verify-summary")
    assert summary.startswith("Violations found: ")
    assert f": {len(said)} violation{'' if len(said) == 1 else 's'} — " in summary
    said = [line for line in said if line.startswith("[chain]")]
    assert len(said) == 1
    assert said[0].startswith(f"[chain] ROUTING_DECISION at position {position} (stream ")
    assert "its chain link does not match its content" in said[0]
    assert console_errors(browser, allow_http_errors=True) == []  # the keyless first look: 401


def _verify(browser: WebDriver) -> str:
    """Press the verify button and wait for the report; whether it says clean."""
    browser.find_element(By.ID, "verify").click()
    assert loaded(browser, "data-verified") == "report"
    return str(browser.find_element(By.ID, "verify-summary").get_attribute("data-clean"))


def _report(service: Service) -> dict[str, Any]:
    found: dict[str, Any] = service.api("audrey", "POST", "/v1/audit/verify")
    return found
