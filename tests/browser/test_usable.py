"""The pages are usable at 1280×800 and on a narrow screen, by keyboard, with readable colours.

Basic accessibility checks in the real browser: every form control has a name a screen reader
reads (a label, or a button's text); the key box is reached with Tab and shows its focus; the
outcome badges' text meets WCAG AA contrast (4.5:1); no page scrolls sideways (wide tables and
the timeline scroll inside their own box).
"""

from __future__ import annotations

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.browser.conftest import ANN, KEYS, Console, wait

SIZES = {"desktop": (1280, 800), "narrow": (390, 844)}
UNNAMED = """
return [...document.querySelectorAll('input, select, button, textarea')]
  .filter(c => !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
               && !(c.tagName === 'BUTTON' && c.textContent.trim()))
  .map(c => c.outerHTML);
"""
COLOURS = """
return [...document.querySelectorAll('.outcome')].map(o => {
  const s = getComputedStyle(o); return [o.dataset.tone, s.color, s.backgroundColor];
});
"""


def _luminance(css: str) -> float:
    red, green, blue = (int(part) / 255 for part in css[css.index("(") + 1 : -1].split(",")[:3])

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(foreground: str, background: str) -> float:
    """The WCAG contrast ratio of two ``rgb(…)`` colours."""
    light, dark = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _sign_in(browser: WebDriver, console: Console, path: str) -> None:
    browser.get(f"{console.base}{path}")
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser).until(lambda d: body.get_attribute("data-loaded"))
    browser.execute_script("sessionStorage.setItem('harness.apiKey', arguments[0])", KEYS[ANN])
    browser.refresh()
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser).until(lambda d: body.get_attribute("data-loaded") not in (None, "", "error"))


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("page", ["runs", "run", "ask", "session", "system"])
def test_a_page_is_usable_at_each_size(
    browser: WebDriver, console: Console, size: str, page: str
) -> None:
    browser.set_window_size(*SIZES[size])
    session = console.api(ANN, f"/v1/runs/{console.success_run}")["session_id"]
    path = {
        "runs": "/console",
        "run": f"/console/runs/{console.success_run}",
        "ask": "/console/ask",
        "session": f"/console/sessions/{session}",
        "system": "/console/system",
    }[page]
    _sign_in(browser, console, path)
    width = browser.execute_script("return window.innerWidth")
    assert width <= SIZES[size][0]  # the browser took the size asked for
    scrolled = browser.execute_script("return document.documentElement.scrollWidth")
    assert scrolled <= width, f"{page} scrolls sideways at {size}: {scrolled} > {width}"
    assert browser.execute_script(UNNAMED) == []
    for tone, colour, background in browser.execute_script(COLOURS):
        assert contrast(colour, background) >= 4.5, (tone, colour, background)


def test_the_key_box_is_reached_by_keyboard_and_shows_its_focus(
    browser: WebDriver, console: Console
) -> None:
    browser.get(f"{console.base}/console")
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser).until(lambda d: body.get_attribute("data-loaded"))
    for _ in range(10):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        if browser.switch_to.active_element.get_attribute("id") == "key-input":
            break
    focused = browser.switch_to.active_element
    assert focused.get_attribute("id") == "key-input"
    assert focused.value_of_css_property("outline-style") != "none"
    focused.send_keys(KEYS[ANN], Keys.ENTER)  # typed and submitted without a mouse
    wait(browser).until(lambda d: body.get_attribute("data-loaded") == "runs")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr[data-run-id]")) == 2
