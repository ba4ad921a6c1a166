"""EvidenceGuard, the one EvidenceRepair, SemanticGuard and the release composition (SPEC §10)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from application.diagnosis import AgentFailure, Completed, ControlledStop
from application.drafts import DRAFT_SCHEMA, DraftError, loads_json, validate_draft
from application.harness import RunAborted
from application.ports import Message, ModelError, ModelRequest
from domain.errors import UnknownAggregateError
from domain.states import (
    EvidenceStatus,
    FallbackType,
    GuardStage,
    ModelStepPurpose,
    ReleaseOutcome,
    RunState,
    SemanticVerdict,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from application.drafts import DiagnosisDraft
    from application.harness import RunContext
    from domain.collection import Collection
    from domain.tool_invocation import ToolInvocation
    from domain.values import Fact

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["SUPPORTED", "UNSUPPORTED"]}, "reason": {"type": "string"}},
    "required": ["verdict"],
    "additionalProperties": False,
}
FALLBACK_MESSAGES = {
    FallbackType.MISSING_REQUIRED_CONTEXT: "I need more context before I can diagnose this.",
    FallbackType.INSUFFICIENT_EVIDENCE: "The checks so far do not support a conclusion yet.",
    FallbackType.EVIDENCE_VALIDATION_FAILED: "The draft conclusion did not match the evidence.",
    FallbackType.SEMANTIC_UNSUPPORTED: "The evidence does not support the drafted conclusion.",
    FallbackType.SEMANTIC_UNAVAILABLE: "The conclusion could not be checked, so it is withheld.",
}


class NoSafeContent(Exception):
    """Release found nothing safe to publish: the run fails (SPEC §10)."""


@dataclass(frozen=True)
class Publication:
    """What Release decided to publish."""

    outcome: ReleaseOutcome
    fallback_type: FallbackType | None
    content: dict[str, Any]


class EvidenceGuard:
    """Checks references against this run's READY + EVIDENCE_FOUND invocations and excerpts."""

    def __init__(self, ctx: RunContext) -> None:
        """Resolve references through the run's own invocations."""
        self.ctx = ctx

    def resolve(self, reference: str) -> ToolInvocation | None:
        """The invocation a reference names if it is READY + EVIDENCE_FOUND and of this run."""
        try:
            key = UUID(reference)
        except ValueError:
            return None
        if str(key) != reference:  # "{id}", "urn:uuid:id", upper case: not the id as recorded
            return None
        invocation = self.ctx.invocations.get(key)
        if invocation is None:
            try:
                invocation = self.ctx.store.get_invocation(key)
            except UnknownAggregateError:
                return None
        usable = invocation.evidence_status is EvidenceStatus.EVIDENCE_FOUND
        return invocation if usable and invocation.run_id == self.ctx.run.id else None

    def invalid(self, references: Iterable[str]) -> tuple[str, ...]:
        """References that do not resolve (SPEC §16 invariant 3)."""
        return tuple(r for r in references if self.resolve(r) is None)

    def verified(self, facts: Iterable[Fact]) -> list[Fact]:
        """Facts whose references all resolve and whose excerpt occurs in a referenced result."""
        kept: list[Fact] = []
        for fact in facts:
            sources = [self.resolve(r) for r in fact.references]
            if not sources or any(s is None for s in sources) or not fact.excerpt:
                continue
            if any(fact.excerpt in s.content for s in sources if s is not None):
                if fact not in kept:
                    kept.append(fact)
        return kept


def release(
    ctx: RunContext, result: Completed | ControlledStop | AgentFailure, collection: Collection
) -> Publication:
    """Turn the agent's ending into safe content; raises NoSafeContent or RunAborted."""
    guard = EvidenceGuard(ctx)
    try:
        if isinstance(result, Completed) and result.draft.conclusion is not None:
            return _release_conclusion(ctx, guard, result.draft, collection)
        draft = result.draft if isinstance(result, Completed) else None
        return _release_progress(ctx, guard, draft, collection)
    except RunAborted as aborted:
        if aborted.termination.state is not RunState.BUDGET_EXHAUSTED:
            raise
        return _release_budget_window(ctx, guard, collection)


def _release_budget_window(
    ctx: RunContext, guard: EvidenceGuard, collection: Collection
) -> Publication:
    """BUDGET_EXHAUSTED may still publish verified progress (SPEC §10), nothing else."""
    facts = guard.verified(collection.facts)
    if ctx.run.guards.stage is GuardStage.NONE:
        ctx.run.check_evidence(False, True, (), len(facts))
        ctx.save()
    if not facts:
        raise NoSafeContent("the budget ran out before any fact was verified")
    return _publish(ctx, FallbackType.INSUFFICIENT_EVIDENCE, facts, collection, ())


def _release_progress(
    ctx: RunContext, guard: EvidenceGuard, draft: DiagnosisDraft | None, collection: Collection
) -> Publication:
    facts = (
        list(collection.facts) + [f.to_fact() for f in draft.facts]
        if draft
        else list(collection.facts)
    )
    verified = guard.verified(facts)
    references = tuple(r for f in facts for r in f.references)
    ctx.run.check_evidence(
        False, not guard.invalid(references), guard.invalid(references), len(verified)
    )
    ctx.save()
    missing = tuple(draft.missing_info) if draft else ()
    if verified:
        return _publish(ctx, FallbackType.INSUFFICIENT_EVIDENCE, verified, collection, missing)
    if missing:
        return _publish(ctx, FallbackType.MISSING_REQUIRED_CONTEXT, [], collection, missing)
    raise NoSafeContent("no verified progress and no missing information to report")


def _release_conclusion(
    ctx: RunContext, guard: EvidenceGuard, draft: DiagnosisDraft, collection: Collection
) -> Publication:
    assert draft.conclusion is not None
    facts = guard.verified(list(collection.facts) + [f.to_fact() for f in draft.facts])
    invalid = guard.invalid(draft.conclusion.references)
    ctx.run.check_evidence(True, not invalid, invalid, len(facts))
    ctx.save()
    if invalid:
        draft = _repair(ctx, draft, invalid)
        assert draft.conclusion is not None
        invalid = guard.invalid(draft.conclusion.references)
        ctx.run.recheck_evidence(not invalid, invalid)
        ctx.save()
        if invalid:
            return _publish(ctx, FallbackType.EVIDENCE_VALIDATION_FAILED, facts, collection, ())
    conclusion = draft.conclusion
    assert conclusion is not None
    verdict = _judge(ctx, draft, guard)
    if verdict is SemanticVerdict.SUPPORTED:
        content = {
            "kind": "diagnosis",
            "conclusion": conclusion.statement,
            "references": list(conclusion.references),
            "facts": [_fact_json(f) for f in facts],
        }
        ctx.run.decide_release(ReleaseOutcome.SUCCESS, None, content)
        ctx.save()
        return Publication(ReleaseOutcome.SUCCESS, None, content)
    kind = FallbackType.SEMANTIC_UNSUPPORTED if verdict else FallbackType.SEMANTIC_UNAVAILABLE
    return _publish(ctx, kind, facts, collection, ())


def _repair(ctx: RunContext, draft: DiagnosisDraft, invalid: tuple[str, ...]) -> DiagnosisDraft:
    """The one repair: ask for the draft again with valid references; keep the old on failure."""
    ctx.check_active()
    ctx.run.repair_evidence(f"invalid references: {', '.join(invalid)}")
    ctx.save()
    valid = [
        str(i)
        for i, inv in ctx.invocations.items()
        if inv.evidence_status is EvidenceStatus.EVIDENCE_FOUND
    ]
    request = ModelRequest(
        ModelStepPurpose.REPAIR,
        (
            Message(
                "system", "Repair the draft: cite only these invocation ids: " + ", ".join(valid)
            ),
            Message("user", draft.model_dump_json()),
        ),
        json_schema=DRAFT_SCHEMA,
    )
    try:
        repaired = validate_draft(ctx.call_model(request).text)
    except (ModelError, DraftError):
        return draft
    return repaired if repaired.conclusion is not None else draft


def _judge(ctx: RunContext, draft: DiagnosisDraft, guard: EvidenceGuard) -> SemanticVerdict | None:
    """SemanticGuard: the judge's verdict, or None when it is unavailable (error, invalid)."""
    assert draft.conclusion is not None
    ctx.check_active()
    ctx.run.attempt_semantic_guard()
    ctx.save()
    evidence = [guard.resolve(r) for r in draft.conclusion.references]
    request = ModelRequest(
        ModelStepPurpose.JUDGE,
        (
            Message("system", "Does the evidence support the conclusion? Answer JSON {verdict}."),
            Message(
                "user",
                json.dumps(
                    {
                        "conclusion": draft.conclusion.statement,
                        "evidence": [e.content for e in evidence if e is not None],
                    }
                ),
            ),
        ),
        json_schema=JUDGE_SCHEMA,
    )
    verdict: SemanticVerdict | None = None
    unavailable = ""
    try:
        answer = loads_json(ctx.call_model(request).text)
        verdict = SemanticVerdict(answer["verdict"])
    except ModelError as error:
        unavailable = f"judge failed: {error}"
    except (ValueError, KeyError, TypeError) as error:
        unavailable = f"judge answered without a valid verdict: {error}"[:300]
    ctx.run.decide_semantic_guard(verdict, unavailable)
    ctx.save()
    return verdict


def _publish(
    ctx: RunContext,
    kind: FallbackType,
    facts: list[Fact],
    collection: Collection,
    missing: tuple[str, ...],
) -> Publication:
    """A fallback: verified facts, scoped NO_EVIDENCE observations and missing info only."""
    content = {
        "kind": "fallback",
        "fallback_type": kind.value,
        "message": FALLBACK_MESSAGES[kind],
        "verified_facts": [_fact_json(f) for f in facts],
        "no_evidence": [
            f"No matching records in the checked scope: {inv.content}"
            for inv in ctx.invocations.values()
            if inv.evidence_status is EvidenceStatus.NO_EVIDENCE
        ],
        "missing_info": list(missing),
    }
    ctx.run.decide_release(ReleaseOutcome.FALLBACK, kind, content)
    ctx.save()
    return Publication(ReleaseOutcome.FALLBACK, kind, content)


def _fact_json(fact: Fact) -> dict[str, Any]:
    data = asdict(fact)
    data["references"] = list(fact.references)
    return data
