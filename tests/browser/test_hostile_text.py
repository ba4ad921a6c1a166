"""Text a person or a model wrote is shown as text: markup in a question never becomes markup.

A user's question (and with it what the run records and the pages show: its title, its row, its
session) is the easiest text an attacker on 127.0.0.1 controls. Asked with HTML and script in it,
the console must show the very characters and run none of them.
"""

from __future__ import annotations

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.browser.conftest import ANN, Console, _ask, console_errors, wait
from tests.browser.test_console import open_with_key

HOSTILE = (
    'Why was checkout slow? <img src=x onerror="window.__pwned=1">'
    "<script>window.__pwned=2</script><b>bold</b> &amp; javascript:alert(1)"
)


def test_markup_in_a_question_is_shown_as_its_characters(
    browser: WebDriver, console: Console
) -> None:
    run_id = _ask(console.clients[ANN], HOSTILE)

    assert open_with_key(browser, f"{console.base}/console", ANN) == "runs"
    row = browser.find_element(By.CSS_SELECTOR, f'#runs tr[data-run-id="{run_id}"]')
    assert HOSTILE in row.text
    assert not row.find_elements(By.CSS_SELECTOR, "img, script, b")

    browser.get(f"{console.base}/console/runs/{run_id}")
    wait(browser).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded"))
    main = browser.find_element(By.TAG_NAME, "main")
    assert HOSTILE in main.text
    assert not main.find_elements(By.CSS_SELECTOR, "img, script:not([src]), b")
    assert browser.execute_script("return window.__pwned === undefined")
    assert console_errors(browser, allow_http_errors=True) == []  # the first, keyless 401 only
