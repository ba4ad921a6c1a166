"""Every record fits or is refused whole: model answers up to the size limit are recorded whole
(and the verifier re-derives the guards from them, on both stores, from a file and ``--db``);
over it, each structured call refuses the answer with its own code, before anything parses it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from application.chat import ChatResult
from application.store import HarnessStore, events_of
from bootstrap.composition import Services
from domain.answer_rules import AnswerRefusal
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import (
    MAX_MODEL_OUTPUT_CHARS,
    DraftOutcome,
    FailureCode,
    ModelStepOutcome,
    ModelStepPurpose,
    RunState,
)
from infrastructure.knowledge import SqlKnowledgeRetriever, index_runbooks
from infrastructure.settings import Settings
from tests.helpers import ask_scripted
from tests.integration._audit_helpers import (
    TLS_PASSAGE,
    TLS_QUESTION,
    TLS_SENTENCE,
    env_of,
    harness_cli,
    load,
    relink,
    save,
    violations,
)

ADVERSARIAL = Path(__file__).resolve().parents[2] / "adversarial"
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"


def _scenario(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ADVERSARIAL / f"{name}.yaml").read_text())
    data.pop("expect")
    return data


def _events(store: HarnessStore, result: ChatResult, kind: type[Any]) -> list[Any]:
    return [e for e in events_of(store, result.run_id) if isinstance(e, kind)]


def _verified_clean(services: Services, settings: Settings, tmp_path: Path) -> None:
    """``audit verify`` finds nothing, from an export file and from the database."""
    services.projector().catch_up()  # --db checks the read tables too
    env = env_of(settings)
    export = tmp_path / "audit.jsonl"
    done = harness_cli(env, "audit", "export", "--all", "--out", str(export))
    assert done.exit_code == 0, done.stderr
    for source in ([str(export)], ["--db"]):
        result = harness_cli(env, "audit", "verify", *source)
        assert result.exit_code == 0, (source, result.stdout)
        assert violations(result) == [], source


def _long_honest_draft() -> dict[str, Any]:
    """The control scenario with a conclusion and twelve facts long enough for ~20,000 chars."""
    scenario = _scenario("control_supported")
    draft = scenario["steps"][-1]["draft"]
    cited = [{"reference": "$1", "excerpt": "upstream timeout after 30s"}]
    said = "checkout requests timed out upstream after 30s while calling pricing-service; "
    draft["conclusion"]["statement"] = "The v2.14.0 deploy made checkout time out upstream. " + (
        said * 45
    )
    draft["facts"] = [{"statement": f"{n}: " + said * 19, "citations": cited} for n in range(1, 13)]
    return scenario


def test_a_20000_character_honest_draft_is_recorded_whole_and_verifies(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    result = ask_scripted(services, _long_honest_draft(), "long", QUESTION)

    assert result.release_outcome is ReleaseOutcome.SUCCESS, result
    (draft,) = _events(services.store, result, Run.DraftProposed)
    assert draft.outcome is DraftOutcome.VALID
    assert 20_000 <= draft.length <= MAX_MODEL_OUTPUT_CHARS
    assert len(draft.text) == draft.length  # whole, not the first 8,000 characters
    assert result.content is not None and len(result.content["facts"]) == 12
    _verified_clean(services, settings, tmp_path)


def test_a_draft_over_the_limit_is_refused_whole_and_the_run_fails_invalid_draft(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    result = ask_scripted(services, _scenario("oversized_draft_without_progress"), "big", QUESTION)

    assert (result.termination.state, result.termination.reason) == (
        RunState.FAILED,
        FailureCode.INVALID_DRAFT,
    )
    (draft,) = _events(services.store, result, Run.DraftProposed)
    step = _events(services.store, result, Run.AgentModelStep)[-1]
    assert (draft.outcome, draft.text) == (DraftOutcome.TOO_LARGE, "")
    assert draft.length > MAX_MODEL_OUTPUT_CHARS
    assert (step.outcome, step.text) == (ModelStepOutcome.TOO_LARGE, "")
    assert (draft.length, draft.sha256) == (step.length, step.sha256)
    _verified_clean(services, settings, tmp_path)


def test_a_draft_over_the_limit_after_verified_progress_falls_back(services: Services) -> None:
    result = ask_scripted(services, _scenario("oversized_draft_refused"), "big", QUESTION)

    assert result.content is not None
    assert result.content["fallback_type"] == FallbackType.INSUFFICIENT_EVIDENCE.value
    (draft,) = _events(services.store, result, Run.DraftProposed)
    assert draft.outcome is DraftOutcome.TOO_LARGE


def test_a_repair_over_the_limit_is_refused_and_the_first_draft_kept(services: Services) -> None:
    result = ask_scripted(services, _scenario("oversized_repair_refused"), "big", QUESTION)

    assert result.content is not None
    assert result.content["fallback_type"] == FallbackType.EVIDENCE_VALIDATION_FAILED.value
    drafts = _events(services.store, result, Run.DraftProposed)
    assert [(d.purpose, d.outcome) for d in drafts] == [
        (ModelStepPurpose.AGENT, DraftOutcome.VALID),
        (ModelStepPurpose.REPAIR, DraftOutcome.TOO_LARGE),
    ]


def test_a_router_answer_over_the_limit_fails_routing_with_its_code(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    result = ask_scripted(services, _scenario("oversized_router_answer"), "big", QUESTION)

    assert result.termination.reason is FailureCode.ROUTING_FAILED
    (decision,) = _events(services.store, result, Run.RoutingDecision)
    (step,) = _events(services.store, result, Run.AgentModelStep)
    assert decision.error == f"TOO_LARGE ({step.length} characters)"
    assert step.length > MAX_MODEL_OUTPUT_CHARS and step.text == ""
    _verified_clean(services, settings, tmp_path)


def test_a_judge_answer_over_the_limit_makes_the_judge_unavailable(services: Services) -> None:
    result = ask_scripted(services, _scenario("oversized_judge_answer"), "big", QUESTION)

    assert result.content is not None
    assert result.content["fallback_type"] == FallbackType.SEMANTIC_UNAVAILABLE.value
    (decision,) = _events(services.store, result, Run.SemanticGuardDecision)
    judge = _events(services.store, result, Run.AgentModelStep)[-1]
    assert judge.purpose is ModelStepPurpose.JUDGE
    assert decision.unavailable == f"TOO_LARGE ({judge.length} characters)"


def test_a_knowledge_answer_over_the_limit_lists_the_passages(
    services: Services, settings: Settings, tmp_path: Path
) -> None:
    index_runbooks(services.engine)
    answer = {
        "json": {
            "text": f"Renew it early: {TLS_SENTENCE}",
            "citations": [{"reference": TLS_PASSAGE, "excerpt": TLS_SENTENCE}],
        },
        "pad": MAX_MODEL_OUTPUT_CHARS,
        "usage": {"tokens_in": 10, "tokens_out": 10},
    }
    result = ask_scripted(
        services,
        {"route": "KNOWLEDGE_QUERY", "answer": answer},
        "knowledge",
        TLS_QUESTION,
        tools={},
        knowledge=SqlKnowledgeRetriever(services.engine),
    )

    assert result.release_outcome is ReleaseOutcome.SUCCESS
    assert result.content is not None
    assert (result.content["grounded"], result.content["refusal"]) == (
        False,
        AnswerRefusal.TOO_LARGE.value,
    )
    assert "Renew it early" not in json.dumps(result.content)
    _verified_clean(services, settings, tmp_path)


# -- the verifier ---------------------------------------------------------------------------------


@pytest.fixture
def long_export(sqlite_settings: Settings, tmp_path: Path) -> list[dict[str, Any]]:
    from bootstrap.composition import bootstrap

    with bootstrap(sqlite_settings, create=True) as services:
        ask_scripted(services, _long_honest_draft(), "long", QUESTION)
    export = tmp_path / "long.jsonl"
    done = harness_cli(env_of(sqlite_settings), "audit", "export", "--all", "--out", str(export))
    assert done.exit_code == 0, done.stderr
    return load(export)


def _verify(settings: Settings, path: Path) -> list[tuple[str, str]]:
    result = harness_cli(env_of(settings), "audit", "verify", str(path))
    return [(f.rule, f.text) for f in violations(result)]


def test_a_draft_recorded_cut_in_a_new_log_is_named(
    long_export: list[dict[str, Any]], sqlite_settings: Settings, tmp_path: Path
) -> None:
    records = copy.deepcopy(long_export)
    (draft,) = [r for r in records if r["type"] == "DRAFT_PROPOSED"]
    draft["payload"]["text"] = draft["payload"]["text"][:12_000]
    relink(records, draft["stream"])

    found = _verify(sqlite_settings, save(tmp_path / "cut.jsonl", records))

    assert any(
        rule == "design §10.1" and "not the whole text the model answered" in text
        for rule, text in found
    ), found


def test_a_draft_cut_as_older_logs_recorded_it_is_read_as_before(
    long_export: list[dict[str, Any]], sqlite_settings: Settings, tmp_path: Path
) -> None:
    """A log written before the limit holds its drafts' first 8,000 characters: the verifier
    reads it and cannot re-derive the guard from it, as it could not before; nothing new."""
    records = copy.deepcopy(long_export)
    (draft,) = [r for r in records if r["type"] == "DRAFT_PROPOSED"]
    draft["payload"]["text"] = draft["payload"]["text"][: Run.LEGACY_DRAFT_CHARS]
    relink(records, draft["stream"])

    found = _verify(sqlite_settings, save(tmp_path / "legacy.jsonl", records))

    assert found and all("draft the log does not hold" in text for _, text in found), found
