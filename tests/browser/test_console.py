"""The console in a real headless Chromium against a real service (see ``conftest.py``).

Each test drives the pages as a person would (typing the key into the page's key box) and waits
only on conditions of the DOM. What the pages show is checked against the API's own answers.
"""

from __future__ import annotations

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.browser._lanes import expected_lanes, lane_starts
from tests.browser.conftest import ANN, BOB, KEYS, SUCCESS_QUESTION, Console, console_errors, wait


def open_with_key(browser: WebDriver, url: str, user: str | None) -> str:
    """Open ``url``, type ``user``'s key once (none: leave it), and wait for the page to load.

    Returns what the page ended in: ``runs``, ``run`` or ``error`` (its ``data-loaded``).
    """
    browser.get(url)
    loaded = wait(browser).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded")
    )
    if user is not None:
        browser.find_element(By.ID, "key-input").send_keys(KEYS[user])
        browser.execute_script("document.body.dataset.loaded = ''")
        browser.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
        loaded = wait(browser).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded")
        )
    assert KEYS.get(user or "", "never") not in browser.current_url
    return str(loaded)


def message(browser: WebDriver) -> str:
    """The page's alert text (empty when hidden)."""
    shown = browser.find_element(By.ID, "message")
    return shown.text if shown.is_displayed() else ""


def test_the_runs_page_lists_a_success_and_a_fallback_run_in_words(
    browser: WebDriver, console: Console
) -> None:
    assert open_with_key(browser, f"{console.base}/console", None) == "error"
    assert "needs an API key" in message(browser)
    assert open_with_key(browser, f"{console.base}/console", ANN) == "runs"
    rows = {
        row.get_attribute("data-run-id"): row
        for row in browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr[data-run-id]")
    }
    listed = console.api(ANN, "/v1/runs")
    assert list(rows) == [run["run_id"] for run in listed["data"]]  # newest first, as the API
    assert list(rows) == [console.fallback_run, console.success_run]
    success = rows[console.success_run].find_element(By.CSS_SELECTOR, ".outcome")
    fallback = rows[console.fallback_run].find_element(By.CSS_SELECTOR, ".outcome")
    assert (success.text, success.get_attribute("data-tone")) == ("Published an answer", "success")
    assert (fallback.text, fallback.get_attribute("data-tone")) == (
        "Safe fallback: the question lacked context",
        "fallback",
    )
    assert success.value_of_css_property("background-color") != fallback.value_of_css_property(
        "background-color"
    )
    cells = [c.text for c in rows[console.success_run].find_elements(By.TAG_NAME, "td")]
    assert cells[3:6] == ["Published an answer", f"{listed['data'][1]['duration_ms']} ms", "5"]
    assert browser.find_element(By.ID, "page-info").text == "1–2 of 2"
    assert browser.execute_script("return sessionStorage.getItem('harness.apiKey')") == KEYS[ANN]
    assert console_errors(browser, allow_http_errors=True) == []  # the first, keyless 401 only


def lanes_drawn(browser: WebDriver) -> list[tuple[str, str, str]]:
    """``(key, label, state)`` of each lane of the SVG, top to bottom, read at one instant."""
    found = browser.execute_script(
        "return [...document.querySelectorAll('#timeline svg g.lane')]"
        ".map(g => [g.dataset.lane, g.dataset.label, g.dataset.state]);"
    )
    return [(str(k), str(label), str(state)) for k, label, state in found]


def first_bar_x(browser: WebDriver, lane: str) -> float:
    """Where the first bar of ``lane`` begins, in the SVG's units."""
    bar = browser.find_element(By.CSS_SELECTOR, f"#timeline g.lane[data-lane='{lane}'] rect.mark")
    return float(bar.get_attribute("x") or "nan")


def test_the_run_page_draws_one_lane_per_phase_as_the_events_say(
    browser: WebDriver, console: Console
) -> None:
    run_id = console.success_run
    assert open_with_key(browser, f"{console.base}/console/runs/{run_id}", ANN) == "run"
    events = console.api(ANN, f"/v1/runs/{run_id}/trace")["data"]
    run = console.api(ANN, f"/v1/runs/{run_id}")
    drawn = lanes_drawn(browser)
    assert drawn == expected_lanes(events)
    labels = [label for _, label, _ in drawn]
    assert labels[:2] == ["routing", "model call 1 · ROUTE"]
    guards = ["evidence guard", "semantic guard", "release", "termination"]
    assert [label for label in labels if label in guards] == guards
    assert labels[labels.index("semantic guard") + 1].endswith("· JUDGE")  # the judge's call
    tools = [state for key, _, state in drawn if key.startswith("tool-")]
    assert tools == ["READY"] * run["tool_calls"]
    assert sum(key.startswith("model-") for key, _, _ in drawn) == run["model_calls"]
    assert {k: s for k, _, s in drawn}["termination"] == "SUCCESS · COMPLETED"
    bars = {k: first_bar_x(browser, k) for k, _, _ in drawn}
    in_time = sorted(bars, key=lane_starts(events).__getitem__)
    assert [bars[k] for k in in_time] == sorted(bars.values())  # to scale: later starts lie right
    assert bars["routing"] < bars["termination"]
    citation = browser.find_element(By.CSS_SELECTOR, "#answer a.citation")
    reference = citation.get_attribute("data-reference")
    citation.click()
    target = wait(browser).until(
        lambda d: d.find_element(By.CSS_SELECTOR, f"[id='evidence-{reference}']")
    )
    quote = citation.text.strip("“”")
    assert any(quote in m.text for m in target.find_elements(By.TAG_NAME, "mark"))  # marked there
    assert browser.current_url.endswith(f"#evidence-{reference}")
    assert (
        "No fallback"
        in browser.find_element(By.CSS_SELECTOR, "dd[data-question='why_fallback']").text
    )
    browser.find_element(By.CSS_SELECTOR, "#raw summary").click()
    positions = browser.find_elements(By.CSS_SELECTOR, "#raw-table tbody tr")
    assert [int(p.get_attribute("data-position") or 0) for p in positions] == [
        e["position"] for e in events
    ]
    assert console_errors(browser, allow_http_errors=True) == []  # the keyless first look: 401


def test_the_fallback_run_shows_its_release_and_what_was_missing(
    browser: WebDriver, console: Console
) -> None:
    run_id = console.fallback_run
    assert open_with_key(browser, f"{console.base}/console/runs/{run_id}", ANN) == "run"
    events = console.api(ANN, f"/v1/runs/{run_id}/trace")["data"]
    drawn = lanes_drawn(browser)
    assert drawn == expected_lanes(events)
    states = {key: state for key, _, state in drawn}
    assert states["release"] == "FALLBACK · MISSING_REQUIRED_CONTEXT"
    assert {s for k, s in states.items() if k.startswith("tool-")} == {"NO_EVIDENCE"}
    outcome = browser.find_element(By.CSS_SELECTOR, "#summary .outcome")
    assert outcome.text == "Safe fallback: the question lacked context"
    assert "I need more context" in browser.find_element(By.ID, "answer").text
    assert console_errors(browser, allow_http_errors=True) == []  # the keyless first look: 401


def test_a_user_cannot_open_another_users_run(browser: WebDriver, console: Console) -> None:
    url = f"{console.base}/console/runs/{console.success_run}"
    assert open_with_key(browser, url, BOB) == "error"
    said = message(browser)
    assert f"There is no run {console.success_run} that you can see" in said
    assert "belongs to another user" in said
    assert not browser.find_element(By.ID, "run").is_displayed()
    assert "checkout" not in browser.find_element(By.TAG_NAME, "main").text  # nothing of ann's
    assert bob_sees_nothing(console)
    assert console_errors(browser, allow_http_errors=True) == []


def bob_sees_nothing(console: Console) -> bool:
    """The API agrees: bob's listing is empty and ann's run is a 404 to him."""
    listed = console.clients[BOB].get("/v1/runs").json()
    return (
        listed["count"] == 0
        and console.clients[BOB].get(f"/v1/runs/{console.success_run}").status_code == 404
    )


def test_a_session_page_lists_its_turns_and_hides_them_from_others(
    browser: WebDriver, console: Console
) -> None:
    run = console.api(ANN, f"/v1/runs/{console.success_run}")
    assert (
        open_with_key(browser, f"{console.base}/console/runs/{console.success_run}", ANN) == "run"
    )
    browser.find_element(By.CSS_SELECTOR, f"#summary a[href$='{run['session_id']}']").click()
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser).until(lambda d: body.get_attribute("data-loaded") == "session")
    turns = console.api(ANN, f"/v1/sessions/{run['session_id']}")["data"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#turns tbody tr")
    assert [r.get_attribute("data-run-id") for r in rows] == [t["run_id"] for t in turns]
    cells = rows[0].find_elements(By.TAG_NAME, "td")
    assert [c.text for c in cells[2:5]] == [SUCCESS_QUESTION, "DIAGNOSIS", "SUCCESS"]
    assert cells[5].text == run["published_result"]["conclusion"]
    browser.execute_script("sessionStorage.setItem('harness.apiKey', arguments[0])", KEYS[BOB])
    browser.refresh()
    body = browser.find_element(By.TAG_NAME, "body")
    assert wait(browser).until(lambda d: body.get_attribute("data-loaded")) == "error"
    assert "belongs to another user" in message(browser)
    assert console_errors(browser, allow_http_errors=True) == []


def test_the_system_page_shows_each_projection_and_its_lag(
    browser: WebDriver, console: Console
) -> None:
    assert open_with_key(browser, f"{console.base}/console/system", ANN) == "system"
    shown = {
        r.get_attribute("data-projection"): r.find_elements(By.TAG_NAME, "td")[1].text
        for r in browser.find_elements(By.CSS_SELECTOR, "#projections tbody tr")
    }
    listed = console.api(ANN, "/v1/projections")
    assert set(shown) == {p["name"] for p in listed["data"]}
    assert all(position.isdigit() for position in shown.values())
    assert console_errors(browser, allow_http_errors=True) == []
