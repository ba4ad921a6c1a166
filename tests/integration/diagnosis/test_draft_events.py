"""Every draft the agent proposes is a ``DRAFT_PROPOSED`` event, bounded, and explained as recorded.

Scripted scenarios on both stores: an empty, an invalid-JSON and a schema-invalid final answer,
a conclusion over the schema's length limit, a valid draft and a 20,000-character one. The
audit verifier decodes the new event, and ``explain`` says what was proposed and withheld.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from application.audit.records import store_records
from application.audit.verify import verify_records
from application.chat import ChatResult
from application.explain import Answer, explain_run
from application.store import HarnessStore, events_of
from bootstrap.composition import Services
from domain.catalogue import event_type_name
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import DraftOutcome, ModelStepPurpose
from infrastructure.model_scripted import load_scenario
from tests.helpers import ask_scripted

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
QUERY = "why is checkout slow?"
CITED = [{"reference": "$1", "excerpt": "connection pool 95% used"}]


def _ask(services: Services, scenario: dict[str, Any]) -> ChatResult:
    return ask_scripted(services, scenario, "session-1", QUERY)


def _scenario(name: str) -> dict[str, Any]:
    return load_scenario(SCENARIOS / f"{name}.yaml")


def _with_final_draft(name: str, draft: dict[str, Any]) -> dict[str, Any]:
    """The scenario ``name`` whose last step drafts ``draft`` (tokens kept small)."""
    scenario = _scenario(name)
    usage = {"tokens_in": 10, "tokens_out": 10}
    scenario["steps"] = [*scenario["steps"][:-1], {"draft": draft, "usage": usage}]
    return scenario


def _proposed(store: HarnessStore, result: ChatResult) -> Run.DraftProposed:
    """The run's one proposed draft, recorded right after the model step that answered it."""
    events = events_of(store, result.run_id)
    names = [event_type_name(type(e)) for e in events]
    (index,) = [i for i, name in enumerate(names) if name == "DRAFT_PROPOSED"]
    step = events[index - 1]
    assert isinstance(step, Run.AgentModelStep) and step.purpose is ModelStepPurpose.AGENT
    assert index < names.index("RUN_TERMINATED")
    draft = events[index]
    assert isinstance(draft, Run.DraftProposed)
    return draft


def _answer(store: HarnessStore, result: ChatResult, question: str) -> Answer:
    (answer,) = [a for a in explain_run(store, result.run_id).answers if a.question == question]
    return answer


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _assert_audit_clean(store: HarnessStore) -> None:
    report = verify_records(list(store_records(store)))
    assert report.clean, [v.message for v in report.violations]


BROKEN = [
    ("paths/empty_draft_bare", DraftOutcome.EMPTY_DRAFT, "neither a tool call nor a draft"),
    ("paths/invalid_json_bare", DraftOutcome.INVALID_JSON, "Expecting ',' delimiter"),
    ("paths/schema_invalid_bare", DraftOutcome.SCHEMA_INVALID, "conclusion: Input should be"),
]
WORDS = {
    DraftOutcome.EMPTY_DRAFT: "that was empty",
    DraftOutcome.INVALID_JSON: "that was not valid JSON",
    DraftOutcome.SCHEMA_INVALID: "that was invalid against the draft schema",
}


def _scripted_text(step: dict[str, Any]) -> str:
    return str(step["text"]) if "text" in step else json.dumps({"draft": step["draft"]})


@pytest.mark.parametrize(("name", "outcome", "detail"), BROKEN, ids=[o.value for _, o, _ in BROKEN])
def test_a_broken_final_answer_is_recorded_with_its_failure_and_explained(
    services: Services, store: HarnessStore, name: str, outcome: DraftOutcome, detail: str
) -> None:
    scenario = _scenario(name)
    text = _scripted_text(scenario["steps"][-1])

    result = _ask(services, scenario)
    draft = _proposed(store, result)

    assert result.release_outcome is ReleaseOutcome.FAILED
    assert (draft.purpose, draft.outcome) == (ModelStepPurpose.AGENT, outcome)
    assert (draft.text, draft.length, draft.sha256) == (text, len(text), _sha256(text))
    assert detail in draft.detail and not draft.detail.startswith(outcome.value)
    stopped = _answer(store, result, "why_stopped_calling_tools")
    assert (
        f"the model proposed a draft ({len(text)} characters) {WORDS[outcome]} ({draft.detail}),"
        " so nothing from it was published" in stopped.answer
    )
    assert stopped.fields["draft_outcome"] == outcome.value
    assert "DRAFT_PROPOSED" in {ref.event_type for ref in stopped.evidence}
    _assert_audit_clean(store)


def test_a_conclusion_over_the_schema_limit_is_withheld_and_explained(
    services: Services,
    store: HarnessStore,
) -> None:
    statement = "The payments pool is too small for the checkout load. " * 93
    assert 5_000 <= len(statement) < 5_100  # the schema allows 4000
    conclusion = {"statement": statement, "citations": CITED}
    scenario = _with_final_draft("paths/schema_invalid_progress", {"conclusion": conclusion})

    result = _ask(services, scenario)
    draft = _proposed(store, result)

    assert result.release_outcome is ReleaseOutcome.FALLBACK
    assert store.get_run(result.run_id).release == (
        ReleaseOutcome.FALLBACK,
        FallbackType.INSUFFICIENT_EVIDENCE,
    )
    assert "too small" not in json.dumps(result.content)  # withheld: nothing of it published
    assert draft.outcome is DraftOutcome.SCHEMA_INVALID
    assert draft.detail == "conclusion.statement: String should have at most 4000 characters"
    assert statement in draft.text and draft.length == len(draft.text) > 5_000
    said = (
        f"the model proposed a draft ({draft.length} characters) that was invalid against the"
        f" draft schema ({draft.detail}), so nothing from it was published"
    )
    fallback = _answer(store, result, "why_fallback")
    stopped = _answer(store, result, "why_stopped_calling_tools")
    assert said in fallback.answer and "only 1 verified fact(s) were published" in fallback.answer
    assert said in stopped.answer and "conclusion)" not in stopped.answer
    assert fallback.fields["draft_detail"] == draft.detail
    _assert_audit_clean(store)


def test_a_valid_draft_is_recorded_whole_and_explained_from_its_text(
    services: Services,
    store: HarnessStore,
) -> None:
    result = _ask(services, _scenario("conclusion_supported"))
    draft = _proposed(store, result)

    assert result.release_outcome is ReleaseOutcome.SUCCESS
    assert (draft.outcome, draft.detail) == (DraftOutcome.VALID, "")
    assert json.loads(draft.text)["draft"]["conclusion"]["statement"].startswith("The checkout")
    assert draft.length == len(draft.text) and draft.sha256 == _sha256(draft.text)
    stopped = _answer(store, result, "why_stopped_calling_tools")
    assert (
        f"the model proposed a draft ({draft.length} characters) with a conclusion,"
        " 0 fact(s) and 0 missing item(s)" in stopped.answer
    )
    _assert_audit_clean(store)


def test_a_20000_character_draft_is_stored_whole_with_its_length_and_hash(
    services: Services,
    store: HarnessStore,
) -> None:
    cited = [{"reference": "not-an-invocation", "excerpt": "connection pool 95% used"}]
    envelope = len(json.dumps({"draft": {"conclusion": {"statement": "", "citations": cited}}}))
    statement = ("pool exhausted; " * 1_250)[: 20_000 - envelope]
    draft_data = {"conclusion": {"statement": statement, "citations": cited}}
    text = json.dumps({"draft": draft_data})  # what the scripted model answers
    assert len(text) == 20_000

    result = _ask(services, _with_final_draft("paths/schema_invalid_progress", draft_data))
    draft = _proposed(store, result)

    assert draft.outcome is DraftOutcome.SCHEMA_INVALID
    assert (draft.length, draft.sha256) == (20_000, _sha256(text))
    assert draft.text == text
    (record,) = [r for r in store_records(store) if r.type == "DRAFT_PROPOSED"]
    assert record.payload["text"] == text and record.payload["length"] == 20_000
    stopped = _answer(store, result, "why_stopped_calling_tools")
    assert "the model proposed a draft (20000 characters) that was invalid" in stopped.answer
    _assert_audit_clean(store)
