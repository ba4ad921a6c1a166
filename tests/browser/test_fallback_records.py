"""A fallback on the run page: the evidence records behind it, never the model's statements.

No judge reads an INSUFFICIENT_EVIDENCE fallback's statements (design §10.1), so the harness
publishes the records they rested on instead, quoted with their time and source: the page lists
them under "What the tools returned", each linked to the result it comes from, where the record
is marked; the model's own words appear nowhere.
"""

from __future__ import annotations

from pathlib import Path

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from infrastructure.settings import Settings
from tests.api._serve import served_client
from tests.browser.conftest import _ask, console_errors
from tests.browser.test_console import open_with_key

SATURATED = Path(__file__).resolve().parents[1] / "scenarios" / "saturated.yaml"


def test_a_fallback_shows_the_records_behind_it_and_none_of_the_models_words(
    browser: WebDriver, sqlite_settings: Settings
) -> None:
    settings = sqlite_settings.model_copy(update={"model": f"scripted:{SATURATED}"})
    with served_client(settings) as served:
        run_id = _ask(served.client, "why is payments slow?")
        base = str(served.client.base_url).rstrip("/")
        assert open_with_key(browser, f"{base}/console/runs/{run_id}", None) == "run"
        answer = browser.find_element(By.ID, "answer")
        headings = [h.text for h in answer.find_elements(By.TAG_NAME, "h3")]
        assert "What the tools returned" in headings, headings
        assert not any(h.startswith("The model's statements") for h in headings), headings
        assert "the payments pool ran hot" not in answer.text
        observed = answer.find_element(By.CSS_SELECTOR, "li a.observation")
        record = "2026-11-30T08:00:00Z payments WARN connection pool 95% used"
        assert observed.text.startswith("At 2026-11-30T08:00:00Z, search_logs ("), observed.text
        assert observed.text.endswith(f'returned "{record}"'), observed.text
        target = observed.get_attribute("href") or ""
        cited = browser.find_element(By.ID, target.rsplit("#", 1)[1])
        assert cited.find_element(By.TAG_NAME, "mark").text == record
        assert console_errors(browser) == []
