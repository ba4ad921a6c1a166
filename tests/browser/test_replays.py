"""The run page shows the run's what-if replays (``harness audit replay``), in words."""

from __future__ import annotations

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.browser.conftest import ANN, Console, console_errors, wait
from tests.browser.test_console import open_with_key
from tests.integration._audit_helpers import harness_cli


def test_the_run_page_lists_each_replay_and_what_it_decided_otherwise(
    browser: WebDriver, console: Console
) -> None:
    run_id = console.success_run
    url = f"{console.base}/console/runs/{run_id}"
    assert open_with_key(browser, url, ANN) == "run"
    assert not browser.find_element(By.ID, "replays-section").is_displayed()  # none yet

    env = {"HARNESS_DATABASE_URL": console.database_url}
    for args in ((), ("--excerpt-min-words", "12", "--excerpt-min-chars", "80")):
        result = harness_cli(env, "audit", "replay", run_id, *args)
        assert result.exit_code == 0, result.output
    browser.refresh()
    body = browser.find_element(By.TAG_NAME, "body")
    assert wait(browser).until(lambda d: body.get_attribute("data-loaded")) == "run"

    section = browser.find_element(By.ID, "replays-section")
    assert section.is_displayed()
    replays = browser.find_elements(By.CSS_SELECTOR, "#replays > li")
    assert [r.get_attribute("data-differs") for r in replays] == ["no", "yes"]
    assert "(nothing changed) SUCCESS: the same decision" in replays[0].text
    assert "(excerpt_min_words 3 -> 12; excerpt_min_chars 12 -> 80)" in replays[1].text
    assert "SUCCESS → FALLBACK EVIDENCE_VALIDATION_FAILED" in replays[1].text
    assert "outcome: SUCCESS -> FALLBACK" in replays[1].text
    assert console_errors(browser, allow_http_errors=True) == []
