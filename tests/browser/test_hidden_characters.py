"""A model's text on the run page: characters no reader sees are shown by their code point.

A conclusion the judge supported is still the model's text: a right-to-left override would
reorder what follows it on the page, a zero-width space hide inside a word, a long unbroken word
push the page sideways. The page spells each hidden character out, as ``harness ask`` does
(``cli/terminal_text.py``), and wraps long words.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from infrastructure.settings import Settings
from tests.api._serve import served_client
from tests.browser.conftest import _ask, console_errors
from tests.browser.test_console import open_with_key

LINE = "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s calling pricing-service"
LONG = "x" * 400


def _scenario(tmp_path: Path) -> Path:
    statement = f"Checkout timed out upstream \u202egnirts desrever\u202c zero\u200bwidth {LONG}"
    citation = {"reference": "$1", "excerpt": "upstream timeout after 30s"}
    scenario = {
        "route": "DIAGNOSIS",
        "tools": {"search_logs": {"lines": [LINE]}},
        "steps": [
            {"tool": "search_logs", "arguments": {"service": "checkout"}},
            {
                "progress": {"gain": "GAINED", "facts": []},
                "draft": {
                    "conclusion": {"statement": statement, "citations": [citation]},
                    "facts": [],
                    "missing_info": [],
                },
            },
        ],
        "judge": "SUPPORTED",
    }
    path = tmp_path / "hidden.yaml"
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True), encoding="utf-8")
    return path


def test_hidden_characters_are_spelled_out_and_long_words_wrap(
    browser: WebDriver, sqlite_settings: Settings, tmp_path: Path
) -> None:
    settings = sqlite_settings.model_copy(update={"model": f"scripted:{_scenario(tmp_path)}"})
    with served_client(settings) as served:
        run_id = _ask(served.client, "why was checkout slow on 2026-11-29?")
        base = str(served.client.base_url).rstrip("/")
        assert open_with_key(browser, f"{base}/console/runs/{run_id}", None) == "run"
        published = browser.find_element(By.CSS_SELECTOR, "#answer .published")
        text = published.text
        assert "\\u202egnirts desrever\\u202c" in text, text
        assert "zero\\u200bwidth" in text, text
        assert "\u202e" not in text and "\u200b" not in text
        overflow = browser.execute_script(
            "const e = document.documentElement; return e.scrollWidth - e.clientWidth;"
        )
        widest = browser.execute_script(
            "let w = null; for (const e of document.querySelectorAll('body *')) {"
            " if (e.scrollWidth > (w ? w.scrollWidth : 0) && e.children.length === 0) w = e; }"
            " return w ? w.tagName + '.' + w.className + ' ' + w.scrollWidth + ' '"
            " + (w.parentElement.id || w.parentElement.className) : '';"
        )
        assert overflow <= 0, (overflow, widest)
        assert console_errors(browser) == []
