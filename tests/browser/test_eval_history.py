"""The Overview's eval history per model, in a real headless Chromium (see ``conftest.py``).

A service of its own with a user's (ann) and an auditor's (audrey) key and three evaluations
recorded as ``harness eval`` records them: two of the offline model, one of another whose name
is markup. What the page shows is read back and compared with ``GET /v1/evals``; the conftest's
service, which recorded none, shows the empty state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

import httpx
import pytest
from pydantic import SecretStr
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from api.auth import Role
from application.eval_records import record_eval
from infrastructure.settings import ApiKey, Settings
from tests.api._serve import served_client
from tests.browser.conftest import KEYS as CONSOLE_KEYS
from tests.browser.conftest import Console, console_errors, wait
from tests.eval_reports import AFTER, BEFORE

ROLES: dict[str, Role] = {"ann": "user", "audrey": "auditor"}
KEYS = {name: f"{name}-{role}-key-9a8b7c6d5e4f3a2b" for name, role in ROLES.items()}
MARKUP_MODEL = "<img src=x onerror=alert(1)>"
THIRD = dataclasses.replace(
    BEFORE,
    eval_id=UUID("c0ffee00-0000-4000-8000-000000000003"),
    model=MARKUP_MODEL,
    started_at=AFTER.started_at + timedelta(hours=1),
    finished_at=AFTER.finished_at + timedelta(hours=1),
)
LATER_OFFLINE = dataclasses.replace(
    AFTER,
    eval_id=UUID("0ff11e00-0000-4000-8000-000000000004"),
    model="offline",
    started_at=AFTER.started_at - timedelta(minutes=30),
    finished_at=AFTER.finished_at - timedelta(minutes=30),
)


@dataclass(frozen=True)
class Service:
    base: str
    clients: dict[str, httpx.Client]

    def evals(self, user: str) -> Any:
        response = self.clients[user].get("/v1/evals")
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("eval-history")
    keys = [ApiKey(key=SecretStr(KEYS[n]), name=n, role=r) for n, r in ROLES.items()]
    settings = Settings(database_url=f"sqlite:///{folder / 'harness.db'}", api_keys=keys)
    with served_client(settings, sample=False) as served:
        for report in (BEFORE, LATER_OFFLINE, AFTER, THIRD):
            record_eval(served.store, report)
        base = str(served.client.base_url).rstrip("/")
        clients = {
            name: httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"})
            for name, key in KEYS.items()
        }
        try:
            yield Service(base, clients)
        finally:
            for client in clients.values():
                client.close()


def open_overview(browser: WebDriver, base: str, key: str) -> str:
    """The Overview with ``key`` in the tab; what its eval history says it did."""
    browser.get(f"{base}/console/overview")
    browser.execute_script("sessionStorage.setItem('harness.apiKey', arguments[0])", key)
    browser.refresh()
    body = browser.find_element(By.TAG_NAME, "body")
    return str(wait(browser).until(lambda d: body.get_attribute("data-evals")))


DRAWN = """
return [...document.querySelectorAll('#eval-models table.evals')].map(t => [t.dataset.model,
  [...t.querySelectorAll('tbody tr')].map(r => [r.dataset.evalId,
    ...[...r.querySelectorAll('td')].map(c => c.textContent)])]);
"""


def test_the_overview_shows_the_eval_history_per_model(
    browser: WebDriver, service: Service
) -> None:
    assert open_overview(browser, service.base, KEYS["audrey"]) == "loaded"
    history = service.evals("audrey")["data"]
    drawn = browser.execute_script(DRAWN)
    models = [model for model, _ in drawn]
    assert models == [MARKUP_MODEL, "gpt-4o-mini", "offline"]  # the newest evaluation first
    by_model = dict(drawn)
    offline = [e for e in history if e["model"] == "offline"]
    assert [r[0] for r in by_model["offline"]] == [e["eval_id"] for e in offline]
    assert [r[0] for r in by_model["offline"]] == [str(LATER_OFFLINE.eval_id), str(BEFORE.eval_id)]
    newest = by_model["gpt-4o-mini"][0]
    assert newest[1:] == [
        "2026-12-01 11:30 UTC", "suites/shipped", "gpt-4o-mini", "2", "0", "2", "1", "4",
    ]  # fmt: skip
    assert browser.find_elements(By.CSS_SELECTOR, "#eval-models img") == []  # markup is text
    titles = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#eval-models h3")]
    assert titles == models
    assert console_errors(browser, allow_http_errors=True) == []


def test_a_user_sees_the_eval_history_though_not_the_daily_totals(
    browser: WebDriver, service: Service
) -> None:
    assert open_overview(browser, service.base, KEYS["ann"]) == "loaded"
    body = browser.find_element(By.TAG_NAME, "body")
    assert wait(browser).until(lambda d: body.get_attribute("data-loaded")) == "error"
    assert "read the daily totals" in browser.find_element(By.ID, "message").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#eval-models tbody tr")) == 4
    assert not browser.find_element(By.ID, "evals-message").is_displayed()


def test_with_no_evaluation_the_overview_says_how_to_record_one(
    browser: WebDriver, console: Console
) -> None:
    assert open_overview(browser, console.base, CONSOLE_KEYS["ann"]) == "empty"
    said = browser.find_element(By.ID, "eval-models").text
    assert said == "No evaluation recorded yet: run harness eval to record one."
    assert browser.find_elements(By.CSS_SELECTOR, "#eval-models table") == []
