"""Issue 29: the offline model is never confidently wrong about when, where or what it looked at.

Each case an on-call engineer tried is pinned end to end: the offline model, the built-in tools
over the sample data, a real store (SQLite and PostgreSQL), and the verifier over the log.
Relative times are read against the sample data's own now (2026-12-01T00:00:00Z) by default.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from application.audit.records import store_records
from application.audit.verify import verify_records
from application.chat import ChatResult
from bootstrap.composition import Services, bootstrap
from domain.release_states import FallbackType, ReleaseOutcome
from infrastructure.ops_data import sample_now, sample_window
from infrastructure.settings import Settings
from tests.integration._cli import harness, store_env

COVERS = "says its data covers only 2026-11-28T00:00:00Z to 2026-12-01T00:00:00Z"
_SCOPE = re.compile(r"start=(\S+Z), end=(\S+Z)")


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Services]:
    with bootstrap(settings, create=True, sample=True) as services:
        yield services


def _ask(services: Services, question: str, previous: ChatResult | None = None) -> dict[str, Any]:
    result = services.chat.ask("s", question, previous_run=previous.run_id if previous else None)
    report = verify_records(list(store_records(services.store)))
    assert report.clean, [v.message for v in report.violations]  # the harness's words hold
    assert result.content is not None
    return result.content


def _windows(content: dict[str, Any]) -> list[tuple[str, str]]:
    """Every window a fallback says was looked at (its empty scopes and observations)."""
    said = [*content["no_evidence"], *(o["scope"] for o in content["observations"])]
    return [(f.group(1), f.group(2)) for text in said for f in [_SCOPE.search(text)] if f]


def test_the_sample_states_its_own_now_at_the_end_of_its_data() -> None:
    assert sample_now() == sample_window()[1]


def test_a_days_facts_are_that_days_in_time_order(runtime: Services) -> None:
    content = _ask(runtime, "Why was checkout slow on 2026-11-29?")
    assert content["kind"] == "diagnosis"
    assert "v2.14.0" in content["conclusion"] and "v2.13.4" not in content["conclusion"]
    assert content["conclusion"].startswith("Between 2026-11-29T00:00:00Z and 2026-11-30T00:00:00Z")
    times = [re.search(r"\d{4}-\d\d-\d\dT\S+Z", f["statement"]) for f in content["facts"]]
    stamps = [t.group(0) for t in times if t]
    assert len(stamps) == len(content["facts"]) >= 3
    assert stamps == sorted(stamps), stamps  # the 10:08 alert after the 09:58 log line
    assert all(s >= "2026-11-28T22:00:00Z" for s in stamps), stamps  # not the 11-28 deploy


def test_yesterday_is_the_day_before_the_reference_time(runtime: Services) -> None:
    content = _ask(runtime, "what happened to payments yesterday")
    windows = _windows(content)
    assert windows and all(end == "2026-12-01T00:00:00Z" for _, end in windows), windows
    assert all(start >= "2026-11-29T00:00:00Z" for start, _ in windows), windows
    assert "2026-11-28" not in str(content)  # the pool incident of 11-28 is not yesterday


def test_right_now_is_the_hour_before_the_reference_time(runtime: Services) -> None:
    content = _ask(runtime, "Is everything OK with search right now?")
    assert content["fallback_type"] == FallbackType.MISSING_REQUIRED_CONTEXT.value
    (item,) = content["missing"]
    assert (item["start"], item["end"]) == ("2026-11-30T23:00:00Z", "2026-12-01T00:00:00Z")
    assert all(end == "2026-12-01T00:00:00Z" for _, end in _windows(content))
    assert "(between 2026-11-30T23:00:00+00:00 and 2026-12-01T00:00:00+00:00)" in str(
        content["missing_info"]
    )


def test_a_fixed_reference_time_moves_yesterday(settings: Settings) -> None:
    fixed = settings.model_copy(update={"reference_time": "2026-11-30T08:00:00Z"})
    with bootstrap(fixed, create=True, sample=True) as services:
        content = _ask(services, "Why was checkout slow yesterday?")
    assert content["kind"] == "diagnosis"
    assert content["conclusion"].startswith("Between 2026-11-29T00:00:00Z and 2026-11-30T00:00:00Z")
    assert "v2.14.0" in content["conclusion"]


def test_the_same_day_in_a_session_is_the_previous_turns_day(runtime: Services) -> None:
    first = runtime.chat.ask("s", "Why was checkout slow on 2026-11-29?")
    assert first.release_outcome is ReleaseOutcome.SUCCESS
    content = _ask(runtime, "What about payments on the same day?", previous=first)
    windows = _windows(content)
    assert windows and all(end == "2026-11-30T00:00:00Z" for _, end in windows), windows
    assert all("service=payments" in note for note in content["no_evidence"])
    (item,) = content["missing"]
    assert (item["service"], item["start"]) == ("payments", "2026-11-29T00:00:00Z")


def test_the_same_day_without_a_previous_turn_asks_for_a_window(runtime: Services) -> None:
    content = _ask(runtime, "What about payments on the same day?")
    assert content["fallback_type"] == FallbackType.MISSING_REQUIRED_CONTEXT.value
    assert [m["kind"] for m in content["missing"]] == ["TIME_WINDOW"]
    assert content["no_evidence"] == [] and content["observations"] == []  # nothing guessed


def test_an_empty_window_says_there_is_no_data_then_and_what_the_data_covers(
    runtime: Services,
) -> None:
    content = _ask(runtime, "Why was payments slow on 2026-10-01 between 02:00 and 03:00 UTC?")
    assert content["fallback_type"] == FallbackType.MISSING_REQUIRED_CONTEXT.value
    assert content["no_evidence"] and all(COVERS in note for note in content["no_evidence"])
    (item,) = content["missing"]
    assert item == {
        "kind": "TIME_WINDOW",
        "service": "payments",
        "start": "2026-11-28T00:00:00Z",
        "end": "2026-12-01T00:00:00Z",
    }
    assert not any(q.startswith("What went wrong") for q in content["missing_info"])


def test_an_empty_window_inside_the_data_claims_no_coverage(runtime: Services) -> None:
    content = _ask(runtime, "Is everything OK with search right now?")
    assert content["no_evidence"] and not any("covers" in n for n in content["no_evidence"])


def test_an_unknown_service_is_told_the_known_ones(runtime: Services) -> None:
    content = _ask(runtime, "Why is billing slow?")
    assert content["missing_info"] == [
        "Which service is affected? (known services: checkout, inventory, payments, search)"
    ]


@pytest.mark.parametrize(
    ("question", "passage"),
    [
        ("How do I restart the checkout service?", "service-restart#how-to-restart-a-service"),
        ("How do I roll back a bad deploy?", "rollback-checklist#how-to-roll-back-a-deploy"),
    ],
)
def test_a_how_to_question_cites_the_passage_that_answers_it(
    runtime: Services, question: str, passage: str
) -> None:
    content = _ask(runtime, question)
    assert content["grounded"] is True
    assert [c["reference"] for c in content["citations"]] == [passage]


def test_harness_ask_prints_the_datas_span_and_the_known_services(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    env = store_env(sqlite_settings)
    empty = harness(
        "ask",
        "Why was payments slow on 2026-10-01 between 02:00 and 03:00 UTC?",
        env=env,
        cwd=tmp_path,
    )
    assert empty.returncode == 0, empty.stderr
    lines = empty.stdout.splitlines()
    assert "== FALLBACK — MISSING_REQUIRED_CONTEXT ==" in lines
    assert sum(COVERS in line for line in lines if line.startswith("  ○ ")) == 3
    assert "What went wrong" not in empty.stdout
    unknown = harness("ask", "Why is billing slow?", env=env, cwd=tmp_path)
    assert "known services: checkout, inventory, payments, search" in unknown.stdout


def test_a_bad_reference_time_is_one_line_and_exit_2(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    env = store_env(sqlite_settings) | {"HARNESS_REFERENCE_TIME": "tomorrow"}
    asked = harness("ask", "Why was checkout slow yesterday?", env=env, cwd=tmp_path)
    assert asked.returncode == 2
    assert "HARNESS_REFERENCE_TIME" in asked.stderr and "'tomorrow'" in asked.stderr
    assert "Traceback" not in asked.stderr
