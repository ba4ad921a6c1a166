"""Diagnostics never echo model text: a router's or judge's unusable answer is named by a code and
a length in ``harness ask``, ``harness runs explain`` and the explain API, while the answer itself
stays whole in the log and the audit export.
"""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

import pytest

from application.explain import explain_run
from bootstrap.composition import bootstrap
from domain.reasons import UnusableAnswer, answer_reason, failed_reason, shown_reason
from infrastructure.settings import Settings
from tests.integration._cli import harness, store_env

ADVERSARIAL = Path(__file__).resolve().parents[2] / "adversarial"
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"


def _asked(settings: Settings, tmp_path: Path, scenario: str) -> tuple[str, str, dict[str, str]]:
    """``harness ask`` with a scenario as the model: its output, the run's id, the env."""
    env = store_env(settings) | {"HARNESS_MODEL": f"scripted:{ADVERSARIAL / scenario}.yaml"}
    asked = harness("ask", QUESTION, env=env, cwd=tmp_path)
    assert "Traceback" not in asked.stderr, asked.stderr
    run_id = asked.stdout.split("harness runs explain ")[1].split("`")[0]
    return asked.stdout, run_id, env


def _everywhere_but_the_log(
    settings: Settings, tmp_path: Path, run_id: str, env: dict[str, str]
) -> str:
    """What ``runs explain`` prints and the explain API's body say about the run."""
    explained = harness("runs", "explain", run_id, env=env, cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    with bootstrap(settings) as services:
        body = explain_run(services.store, UUID(run_id)).model_dump_json()
    return explained.stdout + body


def _exported(tmp_path: Path, run_id: str, env: dict[str, str]) -> str:
    exported = harness("audit", "export", run_id, env=env, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    return exported.stdout


@pytest.mark.parametrize(
    ("scenario", "answer", "code"),
    [
        (
            "router_prose_with_a_marker",
            "It is clearly a DIAGNOSIS, ROUTER-MARKER-5e2a says so",
            "NOT_JSON",
        ),
        (
            "router_unknown_intent_with_a_marker",
            '{"intent": "ROUTER-MARKER-5e2a"}',
            "UNKNOWN_INTENT",
        ),
    ],
)
def test_a_router_answer_without_an_intent_is_named_by_code_and_length(
    sqlite_settings: Settings, tmp_path: Path, scenario: str, answer: str, code: str
) -> None:
    marker = "ROUTER-MARKER-5e2a"
    out, run_id, env = _asked(sqlite_settings, tmp_path, scenario)

    assert f"  intent: none ({code}, {len(answer)} characters)" in out.splitlines()
    assert marker not in out
    shown = _everywhere_but_the_log(sqlite_settings, tmp_path, run_id, env)
    assert marker not in shown
    assert f"routing failed ({code}, {len(answer)} characters)" in shown
    assert json.dumps(answer) in _exported(tmp_path, run_id, env)  # whole, escaped, in the log


@pytest.mark.parametrize(
    ("scenario", "code"),
    [
        ("judge_malformed_json_with_a_marker", "NOT_JSON"),
        ("judge_verdict_with_a_marker", "MALFORMED_VERDICT"),
        ("judge_verdict_word_is_a_marker", "UNKNOWN_VERDICT"),
    ],
)
def test_a_judge_answer_without_verdicts_is_named_by_code_and_length(
    sqlite_settings: Settings, tmp_path: Path, scenario: str, code: str
) -> None:
    marker = "JUDGE-MARKER-91c4"
    out, run_id, env = _asked(sqlite_settings, tmp_path, scenario)

    assert any(
        line.startswith(f"  semantic check: unavailable ({code}, ") for line in out.splitlines()
    ), out
    assert marker not in out
    shown = _everywhere_but_the_log(sqlite_settings, tmp_path, run_id, env)
    assert marker not in shown
    assert f"the semantic judge gave no verdict ({code}, " in shown
    assert marker in _exported(tmp_path, run_id, env)


@pytest.mark.parametrize(
    "recorded",
    [
        "ValueError: 'ROUTER-MARKER' is not a valid Intent",  # as older logs recorded it
        "judge answered without a verdict for every statement: a verdict that is not a"
        " statement and a verdict: {'MARKER': 1}",
        "NOT_JSON (12 characters) MARKER",
        "NOT_JSON (MARKER)",
        "MARKER_CODE (12 characters)",
    ],
)
def test_a_reason_not_of_the_harness_making_is_shown_as_a_length_only(recorded: str) -> None:
    assert shown_reason(recorded) == f"unrecognised reason, {len(recorded)} characters recorded"


def test_the_harness_reasons_are_shown_as_code_and_length() -> None:
    assert shown_reason(answer_reason(UnusableAnswer.VERDICT_MISSING, 412)) == (
        "VERDICT_MISSING, 412 characters"
    )
    assert shown_reason(failed_reason(TimeoutError("MARKER"))) == "MODEL_FAILED, TimeoutError"


def test_a_claim_written_into_tool_arguments_is_never_printed(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    """A call's arguments are the model's words: ``harness ask`` shows its scope as a fallback
    does, values the harness cannot vouch for measured, and a rejected request by its code."""
    printed, run_id, env = _asked(sqlite_settings, tmp_path, "scope_words_never_published")
    for claim in ("caused the outage", "checkout-is-down-because-of-v2.14.0"):
        assert claim not in printed, printed
    assert "contains=‹36 characters›" in printed, printed
    assert "caused the outage" in _exported(tmp_path, run_id, env)  # the log keeps the call
