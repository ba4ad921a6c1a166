"""``harness audit replay``: a recorded diagnosis's release run again, beside the run, never in it.

The four planted incidents are diagnosed by the offline model on both stores, then replayed:
as recorded, each reproduces its decision exactly (the same summary, the same content); with a
stricter excerpt rule, or a judge asked again that rejects (a scenario file, or a strict
OpenAI-compatible server over HTTP), the difference is shown side by side and recorded in the
run's replay stream, which `runs explain` reads back. The run's own events are the same bytes
before and after. What cannot be replayed is refused in one line.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import text

from application.whatif.records import record_replay, replays_of
from application.whatif.replay import ReplayOptions, replay_release
from bootstrap.composition import Services, bootstrap
from domain.release_replay import replays_id
from domain.release_states import GuardStage
from domain.states import Intent
from infrastructure.model_scripted import load_scenario
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from tests.helpers import SCENARIOS, ask_scripted
from tests.integration._audit_helpers import clean_exit, env_of, harness_cli
from tests.integration.model._conformance import conformance_server

STRICT = ("--excerpt-min-words", "12", "--excerpt-min-chars", "80")
"""Excerpt rules none of the offline model's citations meets."""


@dataclass(frozen=True)
class Planted:
    """A store holding the four planted incidents, each diagnosed (SUCCESS) by the offline model."""

    services: Services
    env: dict[str, str]
    runs: list[str]


@pytest.fixture
def planted(settings: Settings) -> Iterator[Planted]:
    with bootstrap(settings, create=True, sample=True) as services:
        runs = [str(services.chat.ask("s", i.question).run_id) for i in sample_incidents()]
        yield Planted(services, env_of(settings), runs)


def replayed(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = harness_cli(env, "audit", "replay", *args, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def exported(env: dict[str, str], run_id: str) -> list[str]:
    """The run's own streams exactly as stored: payloads and chain links, line by line.

    A run's export also holds its replay stream (the replays name the run); that is left out.
    """
    result = harness_cli(env, "audit", "export", run_id)
    assert result.exit_code == 0, result.output
    replays = str(replays_id(UUID(run_id)))
    return [line for line in result.stdout.splitlines() if json.loads(line)["stream"] != replays]


def explained(env: dict[str, str], run_id: str) -> dict[str, Any]:
    result = harness_cli(env, "runs", "explain", run_id, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_each_planted_incident_replayed_as_recorded_reproduces_its_decision(
    planted: Planted,
) -> None:
    for run_id in planted.runs:
        before = exported(planted.env, run_id)
        data = replayed(planted.env, run_id)
        assert data["changes"] == {}
        assert data["answered_by"] == {"judge": "recorded answer"}
        assert data["differences"] == []
        assert data["original"] == data["replayed"]  # outcome, fates, the content itself
        assert data["original"]["outcome"] == "SUCCESS"
        assert {f["fate"] for f in data["original"]["statements"]} == {"published"}
        assert exported(planted.env, run_id) == before
        assert explained(planted.env, run_id)["replays"][0]["differences"] == []


def test_a_stricter_excerpt_rule_is_shown_side_by_side_and_recorded(planted: Planted) -> None:
    run_id = planted.runs[0]
    before = exported(planted.env, run_id)

    result = harness_cli(planted.env, "audit", "replay", run_id[:8], *STRICT)

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"run {run_id}: release replayed (excerpt_min_words 3 -> 12; excerpt_min_chars 12 -> 80)"
    )
    outcome = next(line.split() for line in lines if line.split()[:1] == ["outcome"])
    assert outcome == ["outcome", "SUCCESS", "FALLBACK"]
    assert any("replay:   rejected: cites" in line and "EXCERPT_TOO_WEAK" in line for line in lines)
    assert lines[-1].endswith("recorded as replay 1 of this run (see `harness explain`)")
    assert lines[-2] == "  replay's model calls answered by: repair: none recorded"
    assert exported(planted.env, run_id) == before
    replays = explained(planted.env, run_id)["replays"]
    assert [(r["outcome"], r["fallback_type"]) for r in replays] == [
        ("FALLBACK", "EVIDENCE_VALIDATION_FAILED")
    ]
    assert replays[0]["original_outcome"] == "SUCCESS"
    assert "outcome: SUCCESS -> FALLBACK" in replays[0]["differences"]
    assert replays[0]["changes"] == {
        "excerpt_min_words": "3 -> 12",
        "excerpt_min_chars": "12 -> 80",
    }


def test_a_judge_asked_again_that_rejects_withholds_the_conclusion(
    planted: Planted, tmp_path: Path
) -> None:
    judge = tmp_path / "rejecting-judge.yaml"
    judge.write_text("judge: UNSUPPORTED\n", encoding="utf-8")
    run_id = planted.runs[1]
    before = exported(planted.env, run_id)

    data = replayed(planted.env, run_id, "--judge-model", f"scripted:{judge}")

    assert data["changes"] == {"judge": f"scripted:{judge}"}
    assert data["answered_by"] == {"judge": "asked scripted/scripted"}
    assert (data["replayed"]["outcome"], data["replayed"]["fallback_type"]) == (
        "FALLBACK",
        "SEMANTIC_UNSUPPORTED",
    )
    assert data["replayed"]["judge"] == "UNSUPPORTED"
    fates = {f["label"]: f["fate"] for f in data["replayed"]["statements"]}
    assert fates["conclusion"] == "withheld: UNSUPPORTED"
    assert exported(planted.env, run_id) == before
    assert [r["number"] for r in explained(planted.env, run_id)["replays"]] == [1]


def _rejecting_judge(request: Any) -> Any:
    """The judge's answer UNSUPPORTED for every statement it is asked about."""
    from application.ports import ModelResponse

    asked = json.loads(request.messages[-1].content)["statements"]
    verdicts = [{"statement": s["statement"], "verdict": "UNSUPPORTED"} for s in asked]
    return ModelResponse(text=json.dumps({"verdicts": verdicts}))


def test_a_judge_over_http_is_asked_by_the_wire_rules_and_its_failure_is_named(
    sqlite_settings: Settings,
) -> None:
    with (
        bootstrap(sqlite_settings, create=True, sample=True) as services,
        conformance_server() as server,
    ):
        run_id = str(services.chat.ask("s", sample_incidents()[2].question).run_id)
        env = env_of(sqlite_settings) | {
            "HARNESS_OPENAI_BASE_URL": server.url,
            "HARNESS_OPENAI_MODEL": server.model,
            "HARNESS_MODEL_MAX_RETRIES": "0",
        }
        server.brain = _rejecting_judge
        data = replayed(env, run_id, "--judge-model", "openai")
        assert data["replayed"]["fallback_type"] == "SEMANTIC_UNSUPPORTED"
        assert server.refusals == []  # strict schema, roles and model as OpenAI checks them
        assert [r["response_format"]["type"] for r in server.requests] == ["json_schema"]

        from tests.integration.model._conformance import Fault

        server.faults.append(Fault("status", 503))
        data = replayed(env, run_id, "--judge-model", "openai")
    assert data["replayed"]["fallback_type"] == "SEMANTIC_UNAVAILABLE"
    assert data["replayed"]["judge"].startswith("unavailable (")
    assert data["replayed"]["judge"].startswith(
        "unavailable (MODEL_FAILED (ModelUnavailableError)): ModelUnavailableError:"
    )
    assert "503" in data["replayed"]["judge"]


def test_the_batch_form_summarises_how_many_outcomes_would_change(planted: Planted) -> None:
    result = harness_cli(planted.env, "audit", "replay", "--since", "2000-01-01", *STRICT)

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert sorted(line.split()[0] for line in lines[:4]) == sorted(planted.runs)
    assert all("SUCCESS -> FALLBACK (EVIDENCE_VALIDATION_FAILED)" in line for line in lines[:4])
    assert lines[4].startswith("4 runs replayed: 4 outcome(s) would change")
    assert lines[5] == "  SUCCESS -> FALLBACK: 4"
    for run_id in planted.runs:
        assert len(explained(planted.env, run_id)["replays"]) == 1
    none = harness_cli(
        planted.env, "audit", "replay", "--since", "2000-01-01", "--until", "2000-01-02"
    )
    assert none.exit_code == 0 and none.stdout.startswith("0 runs replayed"), none.output


def test_replays_leave_the_log_verifiable_and_the_read_side_rebuilt_alike(
    planted: Planted,
) -> None:
    replayed(planted.env, planted.runs[0], *STRICT)
    replayed(planted.env, planted.runs[0])
    rebuilt = harness_cli(planted.env, "projections", "rebuild")
    assert rebuilt.exit_code == 0, rebuilt.output
    verified = harness_cli(planted.env, "audit", "verify", "--db")
    assert verified.exit_code == 0 and "no violations" in verified.stdout, verified.output


def test_replays_recorded_at_once_are_each_kept_in_order(planted: Planted) -> None:
    store = planted.services.store
    run_id = UUID(planted.runs[0])
    replay = replay_release(store, run_id, ReplayOptions(min_words=12))
    start = threading.Barrier(4)
    numbers: list[int] = []

    def record() -> None:
        start.wait(timeout=30)
        numbers.append(record_replay(store, replay, datetime.now(UTC)))

    threads = [threading.Thread(target=record) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(numbers) == [1, 2, 3, 4]
    assert [r.number for r in replays_of(store, run_id)] == [1, 2, 3, 4]


TWO_PROGRESS_FACTS = {
    "route": "DIAGNOSIS",
    "tools": {
        "search_logs": {
            "lines": [
                "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s calling pricing"
            ]
        },
        "list_deployments": {
            "lines": ["2026-11-29T09:58:00Z checkout v2.14.0 deployed by ci: new payment client"]
        },
    },
    "steps": [
        {"tool": "search_logs", "arguments": {"service": "checkout"}},
        {
            "progress": {
                "gain": "GAINED",
                "facts": [
                    {
                        "statement": "checkout calls time out",
                        "citations": [{"reference": "$1", "excerpt": "upstream timeout after 30s"}],
                    },
                    {
                        "statement": "the upstream times out",
                        "citations": [{"reference": "$1", "excerpt": "upstream timeout"}],
                    },
                ],
            },
            "tool": "list_deployments",
            "arguments": {"service": "checkout"},
        },
        {
            "progress": {"gain": "GAINED", "facts": []},
            "draft": {
                "conclusion": {
                    "statement": "The v2.14.0 deploy made checkout time out upstream.",
                    "citations": [
                        {"reference": "$1", "excerpt": "checkout ERROR upstream timeout after 30s"},
                        {"reference": "$2", "excerpt": "checkout v2.14.0 deployed by ci"},
                    ],
                },
                "facts": [],
                "missing_info": [],
            },
        },
    ],
    "judge": "SUPPORTED",
}
"""A report resting on two progress facts: one of four words, one of two (too weak today)."""


def test_the_recorded_judge_rules_again_only_on_statements_it_saw(
    sqlite_settings: Settings,
) -> None:
    with bootstrap(sqlite_settings, create=True) as services:
        run_id = str(ask_scripted(services, TWO_PROGRESS_FACTS).run_id)
    env = env_of(sqlite_settings)
    recorded = replayed(env, run_id)["original"]
    fates = {f["label"]: f["fate"] for f in recorded["statements"]}
    assert (recorded["outcome"], fates["progress 1"]) == ("SUCCESS", "published")
    assert fates["progress 2"].endswith("EXCERPT_TOO_WEAK")

    fewer = replayed(env, run_id, "--excerpt-min-words", "5")
    after = {f["label"]: f["fate"] for f in fewer["replayed"]["statements"]}
    assert fewer["replayed"]["outcome"] == "SUCCESS"  # the conclusion, judged as it was
    assert after["progress 1"].endswith("EXCERPT_TOO_WEAK")
    assert fewer["answered_by"] == {"judge": "recorded verdicts"}
    assert "published content differs" in fewer["differences"]

    more = replayed(env, run_id, "--excerpt-min-words", "2")
    assert (more["replayed"]["outcome"], more["replayed"]["fallback_type"]) == (
        "FALLBACK",
        "SEMANTIC_UNAVAILABLE",
    )
    assert more["replayed"]["judge"] == (
        "unavailable (MODEL_FAILED (ModelUnavailableError)): ModelUnavailableError: the recorded"
        " judge gave no verdict on statement 2: give --judge-model"
    )
    assert more["answered_by"] == {"judge": "recorded verdicts"}


ADVERSARIAL = Path(__file__).parents[2] / "adversarial"
HANG_UNTIL_CANCELLED = {
    "client_disconnected",
    "aborted_bare",
    "aborted_progress",
    "cancel_during_tool",
    "cancel_tool_fails_late",
}
"""Scenarios that hang until a test cancels them (they end long before a release)."""


def test_every_recorded_diagnosis_of_the_corpora_replays_to_its_decision(
    sqlite_settings: Settings,
) -> None:
    """Repairs, judges answering prose or twice, budgets spent in the release, hostile quotes:
    replayed as recorded, each release decides exactly as it did, down to the content."""
    files = [*ADVERSARIAL.glob("*.yaml"), *SCENARIOS.glob("**/*.yaml")]
    replays = 0
    with bootstrap(sqlite_settings, create=True) as services:
        for file in sorted(f for f in files if f.stem not in HANG_UNTIL_CANCELLED):
            run = services.store.get_run(ask_scripted(services, load_scenario(file)).run_id)
            if run.intent is not Intent.DIAGNOSIS or run.guards.stage is GuardStage.NONE:
                continue  # routed elsewhere, or ended before its release
            found = replay_release(services.store, run.id, ReplayOptions())
            assert (file.name, found.differences) == (file.name, ()), found.replay
            assert found.original == found.replay, file.name
            replays += 1
    assert replays >= 120  # the corpora hold that many diagnoses that reached their release


HOSTILE = {
    "route": "DIAGNOSIS",
    "tools": {"search_logs": {"lines": ["2026-11-29T10:05:00Z checkout ERROR upstream timeout"]}},
    "steps": [
        {"tool": "search_logs", "arguments": {"service": "checkout"}},
        {
            "progress": {"gain": "GAINED", "facts": []},
            "draft": {
                "conclusion": {
                    "statement": "checkout\x1b[2J timed out\r\u202eupstream",
                    "citations": [
                        {"reference": "$1", "excerpt": "checkout ERROR upstream timeout"}
                    ],
                },
                "facts": [],
                "missing_info": [],
            },
        },
    ],
    "judge": "SUPPORTED",
}


def test_a_statement_acting_on_the_terminal_is_spelled_out(sqlite_settings: Settings) -> None:
    with bootstrap(sqlite_settings, create=True) as services:
        run_id = str(ask_scripted(services, HOSTILE).run_id)
    result = harness_cli(env_of(sqlite_settings), "audit", "replay", run_id)
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\r" not in result.stdout
    assert "\u202e" not in result.stdout
    assert "checkout\\u001b[2J timed out \\u202eupstream" in result.stdout


def test_what_cannot_be_replayed_is_refused_in_one_line(sqlite_settings: Settings) -> None:
    with bootstrap(sqlite_settings, create=True, sample=True) as services:
        chat = str(services.chat.ask("s", "hello").run_id)
        running = str(services.chat.begin("s", "why is checkout slow?")[0].id)
        timed_out = str(ask_scripted(services, "timed_out").run_id)
        diagnosed = str(services.chat.ask("s", sample_incidents()[0].question).run_id)
    env = env_of(sqlite_settings)
    refusals = {
        (chat,): "was routed SYSTEM_CHAT: only a diagnosis has a release to replay",
        (running,): "has not finished: replay it once it has",
        (timed_out,): "ended TIMED_OUT before its release: nothing to replay",
        (str(UUID(int=7)),): "no run 00000000-0000-0000-0000-000000000007 in this log",
        ("fffff",): "no run id starts with 'fffff'",
        (): "give a RUN_ID or --since (not both)",
        (diagnosed, "--since", "2026-01-01"): "give a RUN_ID or --since (not both)",
        ("--until", "2026-01-01"): "give a RUN_ID or --since",
        ("--since", "yesterday"): "--since 'yesterday' is not an ISO 8601 date or time",
        (diagnosed, "--rules", "strictest"): "--rules must be recorded or current",
        (diagnosed, "--judge-model", "bogus"): "--judge-model: 'bogus' is not a model provider",
        (diagnosed, "--judge-model", "scripted:/nonexistent.yaml"): "--judge-model:",
        (diagnosed, "--excerpt-min-words", "-1"): "Invalid value for '--excerpt-min-words'",
    }
    for args, said in refusals.items():
        result = harness_cli(env, "audit", "replay", *args)
        assert result.exit_code == 2, (args, result.output)
        assert clean_exit(result), (args, result.exception)
        assert said in result.output, (args, result.output)
        assert "Traceback" not in result.output
    with bootstrap(sqlite_settings) as services:
        for run_id in (chat, running, timed_out):
            assert replays_of(services.store, UUID(run_id)) == []


def test_a_run_the_batch_cannot_read_is_named_and_the_others_are_replayed(
    sqlite_settings: Settings,
) -> None:
    """A run whose stored event was overwritten with bytes that are no event (SQL access)."""
    with bootstrap(sqlite_settings, create=True, sample=True) as services:
        good, bad = (str(services.chat.ask("s", i.question).run_id) for i in sample_incidents()[:2])
        services.projector().catch_up()  # the read side has both runs
        with services.engine.begin() as connection:
            connection.execute(
                text(
                    "UPDATE stored_events SET state = :state"
                    " WHERE originator_id = :stream AND originator_version = 1"
                ),
                {"state": b"\xff not json", "stream": UUID(bad).hex},
            )
    env = env_of(sqlite_settings)

    result = harness_cli(env, "audit", "replay", "--since", "2000-01-01", *STRICT)

    assert result.exit_code == 0 and clean_exit(result), result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(good) and "SUCCESS -> FALLBACK" in lines[0], lines
    assert lines[1].startswith("1 run replayed: 1 outcome(s) would change"), lines
    assert lines[-2] == "1 run(s) not replayed:", lines
    assert lines[-1].startswith(f"  {bad}: unexpected "), lines
    assert "Traceback" not in result.output
    with bootstrap(sqlite_settings) as services:
        assert len(replays_of(services.store, UUID(good))) == 1
