"""The OpenAPI pages render in a real headless Chromium with no network (see ``conftest.py``).

The browser resolves no host but 127.0.0.1; every request the page made is read from the
browser's own performance log and must have gone to the service. Redoc reaches for its vendor's
logo on a CDN: the page's Content-Security-Policy stops that in the browser (and Redoc then shows
no logo), which the test checks too.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.browser.conftest import Console, console_errors, requested_urls, wait

PAGES = {
    "/docs": ".swagger-ui .opblock-summary-path",  # an operation of the document, rendered
    "/redoc": "[data-section-id^='operation'] h2",
}


@pytest.mark.parametrize("page", list(PAGES))
def test_the_openapi_page_renders_with_no_network(
    browser: WebDriver, console: Console, page: str
) -> None:
    browser.get(f"{console.base}{page}")
    found = wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, PAGES[page]))
    assert len(found) >= len(console.api("ann", "/openapi.json")["paths"])
    urls = requested_urls(browser)
    assert f"{console.base}/openapi.json" in urls
    elsewhere = {
        u: why
        for u, why in urls.items()
        if not u.startswith((f"{console.base}/", "data:", "blob:"))
    }
    assert {u: why for u, why in elsewhere.items() if why != "csp"} == {}  # none left the browser
    refused = [m for m in console_errors(browser) if "Content Security Policy" not in m]
    assert refused == []
    if page == "/docs":
        assert elsewhere == {}
