"""The runs page follows new runs on its first page (a service of its own: this adds runs)."""

from __future__ import annotations

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.browser.conftest import ANN, SUCCESS_QUESTION, Console, _ask, console_errors, wait
from tests.browser.test_console import open_with_key


def listed(browser: WebDriver) -> list[str]:
    """The listed runs' ids, read in one script: a redraw cannot leave a row stale halfway."""
    found = browser.execute_script(
        "return Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]'),"
        " (row) => row.dataset.runId)"
    )
    return [str(run_id) for run_id in found]


def test_a_new_run_appears_at_the_top_without_a_reload(
    browser: WebDriver, console: Console
) -> None:
    assert open_with_key(browser, f"{console.base}/console", ANN) == "runs"
    assert listed(browser) == [console.fallback_run, console.success_run]
    assert browser.find_element(By.ID, "live").is_selected()
    browser.execute_script("document.body.dataset.marker = 'same page'")

    newest = _ask(console.clients[ANN], SUCCESS_QUESTION)

    wait(browser).until(lambda d: listed(d)[:1] == [newest])
    assert listed(browser) == [newest, console.fallback_run, console.success_run]
    assert browser.find_element(By.ID, "page-info").text == "1–3 of 3"
    # the same document, redrawn in place: no reload
    assert browser.execute_script("return document.body.dataset.marker") == "same page"
    assert console_errors(browser, allow_http_errors=True) == []  # the 401 before the key


def test_a_later_page_stays_still(browser: WebDriver, console: Console) -> None:
    assert open_with_key(browser, f"{console.base}/console?offset=1", ANN) == "runs"
    live = browser.find_element(By.ID, "live")
    assert not live.is_enabled()
