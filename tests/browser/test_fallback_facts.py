"""A fallback's statements on the run page: shown with the quotes they rest on, and as unjudged.

No judge reads an INSUFFICIENT_EVIDENCE fallback's statements (design §10.1): only their quotes
were found in the results they cite. The page must say so, and show each quote with a link to
the result it comes from, rather than list the model's words as "verified facts".
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


def test_a_fallbacks_statements_show_their_quotes_under_a_not_judged_heading(
    browser: WebDriver, sqlite_settings: Settings
) -> None:
    settings = sqlite_settings.model_copy(update={"model": f"scripted:{SATURATED}"})
    with served_client(settings) as served:
        run_id = _ask(served.client, "why is payments slow?")
        base = str(served.client.base_url).rstrip("/")
        assert open_with_key(browser, f"{base}/console/runs/{run_id}", None) == "run"
        answer = browser.find_element(By.ID, "answer")
        headings = [h.text for h in answer.find_elements(By.TAG_NAME, "h3")]
        assert any(h.startswith("The model's statements, not judged") for h in headings), headings
        assert "Verified facts" not in headings
        quote = answer.find_element(By.CSS_SELECTOR, "li a.citation")
        assert quote.text == "“connection pool 95% used”"
        assert "the payments pool ran hot" in quote.find_element(By.XPATH, "ancestor::li[2]").text
        target = quote.get_attribute("href") or ""
        cited = browser.find_element(By.ID, target.rsplit("#", 1)[1])
        assert cited.find_element(By.TAG_NAME, "mark").text == "connection pool 95% used"
        assert console_errors(browser) == []
