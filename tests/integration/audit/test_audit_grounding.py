"""``harness audit verify`` proves every release from the log: the grounding weaknesses, replayed.

A log is recorded with the scripted model (a report with a judged fact, fallbacks after an
unsupported conclusion, after failed tools, with missing information, a weak progress fact),
exported, verified clean, and then rewritten the way each weakness of the old release pipeline
showed in a log — content published that the recorded drafts, evidence and verdicts do not
justify — with every chain link recomputed (plain SHA-256), so only the grounding checks can
find it. Each case must be named on the exact RELEASE_DECISION or guard event.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bootstrap.composition import bootstrap
from infrastructure.model_scripted import (
    load_scenario,
)
from infrastructure.settings import Settings
from tests.helpers import ask_scripted
from tests.integration._audit_helpers import env_of, harness_cli, load, named, relink, save

ADVERSARIAL = Path(__file__).parents[2] / "adversarial"
SCENARIOS = (
    "control_supported",
    "fact_excerpt_absent_repaired",
    "restated_conclusion_in_unsupported_fallback",
    "every_tool_failed",
    "weak_progress_fact_never_published",
    "missing_info_scoped_service_kept",
    "restated_conclusion_in_unavailable_fallback",
    "schema_invalid_long_conclusion",
    "cut_decimal_quote",
    "quote_truncation_note",
    "judge_answers_prose",
    "empty_result_stays_scoped",
)
RULE = "design §10.1"


@dataclass(frozen=True)
class Logged:
    env: dict[str, str]
    export: Path
    runs: dict[str, str]
    """Each scenario's run id."""


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Logged:
    directory = tmp_path_factory.mktemp("grounding")
    settings = Settings(database_url=f"sqlite:///{directory / 'harness.db'}")
    runs: dict[str, str] = {}
    with bootstrap(settings, create=True) as services:
        for name in SCENARIOS:
            scenario = load_scenario(ADVERSARIAL / f"{name}.yaml")
            scenario.pop("expect")
            question = "Why was checkout slow on 2026-11-29?"
            runs[name] = str(ask_scripted(services, scenario, name, question).run_id)
    env = env_of(settings)
    export = directory / "audit.jsonl"
    done = harness_cli(env, "audit", "export", "--all", "--out", str(export))
    assert done.exit_code == 0, done.stderr
    return Logged(env, export, runs)


def _decision(records: list[dict[str, Any]], run: str) -> dict[str, Any]:
    return next(r for r in records if r["type"] == "RELEASE_DECISION" and r["stream"] == run)


def _verify_rewritten(
    logged: Logged,
    tmp_path: Path,
    records: list[dict[str, Any]],
    record: dict[str, Any],
    rule: str | None = RULE,
) -> list[str]:
    """What ``audit verify`` names at ``record`` after the edit, relinked: under ``rule``, or
    under any rule (each text prefixed by its rule) when ``rule`` is None."""
    relink(records, record["stream"])
    path = save(tmp_path / "rewritten.jsonl", records)
    result = harness_cli(logged.env, "audit", "verify", str(path))
    assert result.exit_code == 1, result.stdout
    if rule is not None:
        return [found.text for found in named(result, record, rule)]
    return [f"[{found.rule}] {found.text}" for found in named(result, record)]


def test_the_recorded_log_verifies_clean(logged: Logged) -> None:
    result = harness_cli(logged.env, "audit", "verify", str(logged.export))
    assert result.exit_code == 0, result.stdout


def test_a_published_excerpt_of_one_letter_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 2: a one-character excerpt "verified" any statement."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["control_supported"])
    fact = decision["payload"]["content"]["facts"][0]
    fact["citations"][0]["excerpt"] = "e"
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("excerpt proves nothing (1 words" in text for text in found), found


def test_a_citation_published_twice_respaced_is_named(logged: Logged, tmp_path: Path) -> None:
    """The same citation again with its whitespace changed is the same citation (§10.1)."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["control_supported"])
    fact = decision["payload"]["content"]["facts"][0]
    again = dict(fact["citations"][0])
    again["excerpt"] = "  " + again["excerpt"].replace(" ", "\n", 1)
    fact["citations"].append(again)
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("cites the same excerpt twice" in text for text in found), found


def test_a_published_fact_the_judge_never_saw_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 3: facts of a SUCCESS report rode along unjudged."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["control_supported"])
    content = decision["payload"]["content"]
    extra = copy.deepcopy(content["facts"][0])
    extra["statement"] = "the payments database is on fire"
    content["facts"].append(extra)
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("on fire" in text and "did not find SUPPORTED" in text for text in found), found


def test_a_rewritten_conclusion_is_named(logged: Logged, tmp_path: Path) -> None:
    """Published text must be the judged text: a conclusion edited after the judge ruled."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["control_supported"])
    decision["payload"]["content"]["conclusion"] = "The database is down."
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("the conclusion" in text for text in found), found


def test_a_restated_conclusion_in_a_fallback_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 2b: the rejected conclusion, word for word, published as a 'verified fact'."""
    records = load(logged.export)
    run = logged.runs["restated_conclusion_in_unsupported_fallback"]
    decision = _decision(records, run)
    judged = next(
        r for r in records if r["type"] == "SEMANTIC_GUARD_DECISION" and r["stream"] == run
    )
    conclusion = judged["payload"]["judged"][0]["_data_"]["statement"]
    content = decision["payload"]["content"]
    content["verified_facts"].append(
        {
            "statement": "Indeed, " + conclusion.lower(),  # not the judged text: reworded
            "citations": [{"reference": "x", "excerpt": "upstream timeout after 30s"}],
            "references": ["x"],
        }
    )
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("no judge ruled on it" in text for text in found), found
    del content["observations"]  # as recorded before observations: judged by the older rule
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("restating the withheld conclusion" in text for text in found), found


def test_a_fallback_message_of_the_models_is_named(logged: Logged, tmp_path: Path) -> None:
    """Only the harness speaks in a fallback: its message is the one for its type."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["restated_conclusion_in_unavailable_fallback"])
    decision["payload"]["content"]["message"] = "The v2.14.0 deploy made checkout time out."
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("message that is not the harness's" in text for text in found), found


def test_an_observation_worded_otherwise_is_named(logged: Logged, tmp_path: Path) -> None:
    """An observation's text, source, record or order that the log does not give is named."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["schema_invalid_long_conclusion"])
    observations = decision["payload"]["content"]["observations"]
    assert observations, decision
    observations[0]["text"] = "At 2026-11-29T10:05:00Z the deploy broke checkout"
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("not in the harness's words" in text for text in found), found
    observations[0] |= {"record": "upstream timeout after 30s calling pricing-service"}
    observations[0] |= {
        "text": 'Undated: search_logs ({}) returned "{}"'.format(
            observations[0]["scope"], observations[0]["record"]
        )
    }
    observations[0]["at"] = None
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("part of a record" in text for text in found), found


def test_free_prose_in_missing_info_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 4: a root-cause claim placed in missing_info was published verbatim."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["missing_info_scoped_service_kept"])
    decision["payload"]["content"]["missing_info"] = ["root cause: deploy v2.14.0 broke pricing"]
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("not the harness's wording" in text for text in found), found


def test_a_failed_tool_worded_as_absence_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 6: every tool FAILED and the fallback said nothing was found."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["every_tool_failed"])
    content = decision["payload"]["content"]
    assert len(content["not_checked"]) == 2
    content["not_checked"] = []
    content["message"] = "No alerts, errors or deployments were found."
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("but 2 failed" in text for text in found), found


def test_a_guard_verdict_the_log_does_not_give_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 1: a failing citation filtered silently while the guard reported all well."""
    records = load(logged.export)
    run = logged.runs["weak_progress_fact_never_published"]
    guard = next(r for r in records if r["type"] == "EVIDENCE_GUARD_INITIAL" and r["stream"] == run)
    assert guard["payload"]["rejected"], "the weak progress fact was named"
    guard["payload"]["rejected"] = []
    found = _verify_rewritten(logged, tmp_path, records, guard)
    assert any("EvidenceGuard verdict (valid=True, 0 failing" in text for text in found), found


def test_a_model_answer_used_after_its_bound_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 5: a judge answering after the model timeout still decided the release."""
    records = load(logged.export)
    run = logged.runs["control_supported"]
    step = next(
        r
        for r in records
        if r["type"] == "AGENT_MODEL_STEP"
        and r["stream"] == run
        and r["payload"]["purpose"]["_data_"] == "JUDGE"
    )
    bound = step["payload"]["bound_ms"]
    assert bound > 0, "the bound of the wait is recorded"
    step["payload"]["latency_ms"] = bound + 2500
    relink(records, step["stream"])
    result = harness_cli(logged.env, "audit", "verify", str(save(tmp_path / "late.jsonl", records)))
    assert result.exit_code == 1, result.stdout
    (found,) = named(result, step, "design §14")
    assert "JUDGE answer that took" in found.text and "past its bound" in found.text


def test_a_draft_failure_reported_valid_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 1: a fact quoting what its result does not hold, filtered while 'valid'."""
    records = load(logged.export)
    run = logged.runs["fact_excerpt_absent_repaired"]
    guard = next(r for r in records if r["type"] == "EVIDENCE_GUARD_INITIAL" and r["stream"] == run)
    (rejected,) = guard["payload"]["rejected"]
    assert rejected["_data_"]["problem"]["_data_"] == "EXCERPT_ABSENT"
    guard["payload"]["rejected"], guard["payload"]["valid"] = [], True
    found = _verify_rewritten(logged, tmp_path, records, guard)
    assert any("the log does not give (1 failing citation(s))" in text for text in found), found


def test_a_log_without_its_draft_is_named(logged: Logged, tmp_path: Path) -> None:
    """Weakness 7: drafts were not events, so a guard's verdict rested on nothing recorded."""
    records = load(logged.export)
    run = logged.runs["control_supported"]
    draft = next(r for r in records if r["type"] == "DRAFT_PROPOSED" and r["stream"] == run)
    records.remove(draft)  # as the old harness recorded it: no DRAFT_PROPOSED at all
    for record in records:
        if record["stream"] == run and record["version"] > draft["version"]:
            record["version"] -= 1
    guard = next(r for r in records if r["type"] == "EVIDENCE_GUARD_INITIAL" and r["stream"] == run)
    found = _verify_rewritten(logged, tmp_path, records, guard)
    assert any("a draft the log does not hold" in text for text in found), found


def test_a_quote_inside_a_published_statement_that_is_no_citation_is_named(
    logged: Logged, tmp_path: Path
) -> None:
    """A quoted span in a published statement must be one of its excerpts, even if judged."""
    records = load(logged.export)
    run = logged.runs["control_supported"]
    decision = _decision(records, run)
    judged = next(
        r for r in records if r["type"] == "SEMANTIC_GUARD_DECISION" and r["stream"] == run
    )
    statement = 'checkout logged "error_rate=0" and timed out upstream'
    judged["payload"]["judged"][1]["_data_"]["statement"] = statement
    decision["payload"]["content"]["facts"][0]["statement"] = statement
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("quoting 'error_rate=0', which is none of its excerpts" in t for t in found), found


def test_a_missing_service_only_the_model_named_is_named(logged: Logged, tmp_path: Path) -> None:
    """A fallback may name a service the question or the tools' catalogue named, no other."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["missing_info_scoped_service_kept"])
    content = decision["payload"]["content"]
    content["missing"][0]["service"] = "ledger-is-corrupt"
    content["missing_info"][0] = content["missing_info"][0].replace(
        "(service checkout)", "(service ledger-is-corrupt)"
    )
    found = _verify_rewritten(logged, tmp_path, records, decision)
    assert any("neither the question nor the tools' catalogue" in t for t in found), found


def _cited_ready(records: list[dict[str, Any]], decision: dict[str, Any]) -> dict[str, Any]:
    """The READY event of the invocation the decision's first fact cites."""
    reference = decision["payload"]["content"]["facts"][0]["citations"][0]["reference"]
    return next(
        r for r in records if r["type"] == "TOOL_INVOCATION_READY" and r["stream"] == reference
    )


def test_a_published_excerpt_cutting_a_token_is_named(logged: Logged, tmp_path: Path) -> None:
    """An excerpt ending at a join inside a token ("pricing" of "pricing-service")."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["control_supported"])
    fact = decision["payload"]["content"]["facts"][0]
    fact["citations"][0]["excerpt"] = "upstream timeout after 30s calling pricing"
    found = _verify_rewritten(logged, tmp_path, records, decision, None)
    assert any("cuts a token of it (EXCERPT_CUTS_A_TOKEN)" in text for text in found), found


def test_a_published_excerpt_quoting_a_note_is_named(logged: Logged, tmp_path: Path) -> None:
    """A note recorded apart from the records is quoted as if the tool had returned it."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["control_supported"])
    ready = _cited_ready(records, decision)
    ready["payload"]["notes"] = ["[7 more records truncated]"]
    relink(records, ready["stream"])
    fact = decision["payload"]["content"]["facts"][0]
    fact["citations"][0]["excerpt"] = "7 more records truncated"
    found = _verify_rewritten(logged, tmp_path, records, decision, None)
    assert any("quotes a note about the result" in text for text in found), found


def test_an_old_log_quoting_a_note_written_into_its_content_is_named(
    logged: Logged, tmp_path: Path
) -> None:
    """Before notes were kept apart they were lines of the content: still never evidence."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["control_supported"])
    ready = _cited_ready(records, decision)
    content = ready["payload"]["content"] + "\n[7 more records beyond limit=1]"
    data = content.encode()
    ready["payload"].update(
        content=content, byte_size=len(data), content_hash=hashlib.sha256(data).hexdigest()
    )
    assert ready["payload"].pop("class_version") == 3  # as version 1 recorded it: no notes
    ready["payload"].pop("notes")
    ready["payload"].pop("redactions")
    relink(records, ready["stream"])
    fact = decision["payload"]["content"]["facts"][0]
    fact["citations"][0]["excerpt"] = "7 more records beyond limit=1"
    found = _verify_rewritten(logged, tmp_path, records, decision, None)
    assert any("(EXCERPT_QUOTES_A_NOTE)" in text for text in found), found


@pytest.mark.parametrize(
    ("scenario", "problem"),
    [
        ("cut_decimal_quote", "EXCERPT_CUTS_A_TOKEN"),
        ("quote_truncation_note", "EXCERPT_QUOTES_A_NOTE"),
    ],
)
def test_a_guard_verdict_hiding_a_cut_or_a_note_is_named(
    logged: Logged, tmp_path: Path, scenario: str, problem: str
) -> None:
    """The verifier re-derives the new problems with the guard's own rule: a verdict that
    names another problem (or none) is not the one the log gives."""
    records = load(logged.export)
    run = logged.runs[scenario]
    guard = next(r for r in records if r["type"] == "EVIDENCE_GUARD_INITIAL" and r["stream"] == run)
    (rejected,) = guard["payload"]["rejected"]
    assert rejected["_data_"]["problem"]["_data_"] == problem
    rejected["_data_"]["problem"]["_data_"] = "EXCERPT_ABSENT"
    found = _verify_rewritten(logged, tmp_path, records, guard)
    assert any("that the log does not give" in text for text in found), found


def test_a_judges_words_recorded_as_its_reason_are_named(logged: Logged, tmp_path: Path) -> None:
    """Why the judge was unavailable is a code and a length, never the judge's own words."""
    records = load(logged.export)
    run = logged.runs["judge_answers_prose"]
    decision = next(
        r for r in records if r["type"] == "SEMANTIC_GUARD_DECISION" and r["stream"] == run
    )
    assert decision["payload"]["unavailable"].startswith("NOT_JSON ("), decision["payload"]
    decision["payload"]["unavailable"] = "judge answered: SUPPORTED, definitely"
    found = _verify_rewritten(logged, tmp_path, records, decision, None)
    assert any("unusable as free text" in text for text in found), found


def test_a_claim_prefixed_to_a_no_evidence_note_is_named(logged: Logged, tmp_path: Path) -> None:
    """A NO_EVIDENCE note is the harness's words and its scope, nothing before or after them."""
    records = load(logged.export)
    decision = _decision(records, logged.runs["empty_result_stays_scoped"])
    notes = decision["payload"]["content"]["no_evidence"]
    assert notes == ["No matching records from search_logs for service=checkout"]
    notes[0] = "Root cause: the v2.14.0 deploy broke pricing. " + notes[0]
    found = _verify_rewritten(logged, tmp_path, records, decision, None)
    assert any("NO_EVIDENCE note" in text for text in found), found
