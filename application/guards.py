"""Release (design §10): the EvidenceGuard, the one EvidenceRepair, the SemanticGuard, content.

Every published sentence is proven by the log: a statement reaches a reader only when each of
its citations quotes an informative excerpt of a READY + EVIDENCE_FOUND result of this run,
and, when there is a conclusion, when the judge found exactly that statement supported. A
fallback never holds a statement of the model's: no judge ruled on it, so it quotes the
evidence records the proven statements rested on, in the harness's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from application.diagnosis import AgentFailure, Completed, ControlledStop
from application.drafts import DraftError
from application.evidence import Checked, EvidenceGuard, labelled
from application.judge import judge
from application.ports import Message, ModelError, ModelOutputTooLarge, ModelRequest
from application.prompts import DRAFT_SCHEMA, repair_prompt
from application.proposals import record_draft
from application.published import fallback, report, shown
from application.run_aborted import BudgetExhausted
from domain.grounding import DEFAULT_RULES, GroundingRules
from domain.observations import facts_in_time_order, observations
from domain.release_states import FallbackType, GuardStage, ReleaseOutcome, SemanticVerdict
from domain.states import ModelStepPurpose
from domain.values import Fact

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from application.drafts import DiagnosisDraft, MissingOut
    from application.release_context import ReleaseContext
    from domain.collection import Collection
    from domain.grounding import JudgedStatement
    from domain.published import Published


class NoSafeContent(Exception):
    """Release found nothing safe to publish: the run fails (design §10)."""


@dataclass(frozen=True)
class Publication:
    """What Release decided to publish."""

    outcome: ReleaseOutcome
    fallback_type: FallbackType | None
    content: Published


def publish(
    ctx: ReleaseContext, outcome: ReleaseOutcome, kind: FallbackType | None, content: Published
) -> Publication:
    """Record ``RELEASE_DECISION`` with the content as stored (its JSON), and save the run."""
    ctx.run.decide_release(outcome, kind, content.to_json())
    ctx.journal.record()
    return Publication(outcome, kind, content)


def release(
    ctx: ReleaseContext,
    result: Completed | ControlledStop | AgentFailure,
    collection: Collection,
    rules: GroundingRules = DEFAULT_RULES,
) -> Publication:
    """Turn the agent's ending into safe content; raises NoSafeContent or RunAborted."""
    guard = EvidenceGuard(ctx, rules)
    try:
        if isinstance(result, Completed) and result.draft.conclusion is not None:
            return _release_conclusion(ctx, guard, result.draft, collection)
        draft = result.draft if isinstance(result, Completed) else None
        return _release_progress(ctx, guard, draft, collection)
    except BudgetExhausted:  # any other end of the run goes on up: nothing is published
        return _release_budget_window(ctx, guard, collection)


def _progress(guard: EvidenceGuard, collection: Collection) -> Checked:
    return guard.check(labelled("progress", collection.facts))


def _release_budget_window(
    ctx: ReleaseContext, guard: EvidenceGuard, collection: Collection
) -> Publication:
    """BUDGET_EXHAUSTED may still publish verified progress (design §10), nothing else."""
    checked = _progress(guard, collection)
    if ctx.run.guards.stage is GuardStage.NONE:
        ctx.run.check_evidence(False, True, (), len(checked.passed), checked.rejected, guard.rules)
        ctx.journal.record()
    if not checked.passed:
        raise NoSafeContent("the budget ran out before any fact was verified")
    return _publish(ctx, guard, FallbackType.INSUFFICIENT_EVIDENCE, checked.passed, ())


def _release_progress(
    ctx: ReleaseContext, guard: EvidenceGuard, draft: DiagnosisDraft | None, collection: Collection
) -> Publication:
    """No conclusion: publish what the citations prove, or ask for what is missing."""
    progress = _progress(guard, collection)
    drafted = guard.check(labelled("fact", [f.to_fact() for f in draft.facts] if draft else []))
    verified = _unique(progress.passed + drafted.passed)
    rejected = progress.rejected + drafted.rejected
    ctx.run.check_evidence(
        False, drafted.valid, drafted.references, len(verified), rejected, guard.rules
    )
    ctx.journal.record()
    missing = draft.missing_info if draft else []
    if verified:
        return _publish(ctx, guard, FallbackType.INSUFFICIENT_EVIDENCE, verified, missing)
    if missing:
        return _publish(ctx, guard, FallbackType.MISSING_REQUIRED_CONTEXT, [], missing)
    raise NoSafeContent("no verified progress and no missing information to report")


def _check_draft(guard: EvidenceGuard, draft: DiagnosisDraft) -> Checked:
    """The conclusion and every fact of a draft: it passes only if every citation does."""
    assert draft.conclusion is not None
    statements = [("conclusion", draft.conclusion.to_fact())]
    return guard.check(statements + labelled("fact", [f.to_fact() for f in draft.facts]))


def _release_conclusion(
    ctx: ReleaseContext, guard: EvidenceGuard, draft: DiagnosisDraft, collection: Collection
) -> Publication:
    progress = _progress(guard, collection)
    checked = _check_draft(guard, draft)
    verified = _unique(progress.passed + _facts_of(checked, draft))
    ctx.run.check_evidence(
        True,
        checked.valid,
        checked.references,
        len(verified),
        checked.rejected + progress.rejected,
        guard.rules,
    )
    ctx.journal.record()
    if not checked.valid:
        draft, checked = _repair(ctx, guard, draft, checked)
        verified = _unique(progress.passed + _facts_of(checked, draft))
        ctx.run.recheck_evidence(checked.valid, checked.references, checked.rejected)
        ctx.journal.record()
    assert draft.conclusion is not None
    conclusion = draft.conclusion.to_fact()
    if not checked.valid:
        return _publish(ctx, guard, FallbackType.EVIDENCE_VALIDATION_FAILED, verified, ())
    judged = judge(ctx, [conclusion, *verified], guard)
    return _after_judge(ctx, guard, conclusion, judged)


def _after_judge(
    ctx: ReleaseContext, guard: EvidenceGuard, conclusion: Fact, judged: Sequence[JudgedStatement]
) -> Publication:
    """SUCCESS with what the judge supported; else a fallback of records, no model statement.

    After the judge rejected the conclusion (or could not rule), no statement of the model's is
    published at all, so a paraphrase of the withheld conclusion has nowhere to ride: the
    fallback quotes the records behind the statements the judge did not reject.
    """
    verdict = judged[0].verdict
    if verdict is SemanticVerdict.SUPPORTED:
        supported = [_fact(j) for j in judged[1:] if j.verdict is SemanticVerdict.SUPPORTED]
        ordered = facts_in_time_order(supported, lambda ref: _content(guard, ref))
        return publish(ctx, ReleaseOutcome.SUCCESS, None, report(conclusion, ordered))
    behind = [_fact(j) for j in judged[1:] if j.verdict is not SemanticVerdict.UNSUPPORTED]
    if verdict is SemanticVerdict.UNSUPPORTED:
        return _publish(ctx, guard, FallbackType.SEMANTIC_UNSUPPORTED, behind, ())
    return _publish(ctx, guard, FallbackType.SEMANTIC_UNAVAILABLE, behind, ())


def _repair(
    ctx: ReleaseContext, guard: EvidenceGuard, draft: DiagnosisDraft, checked: Checked
) -> tuple[DiagnosisDraft, Checked]:
    """The one repair: ask for the draft again, told what failed; keep the old on failure."""
    ctx.check_active()
    ctx.run.repair_evidence(_failures(checked))
    ctx.journal.record()
    usable = {
        str(i): inv.content
        for i, inv in ctx.invocations.items()
        if guard.content(str(i)) is not None
    }
    request = ModelRequest(
        ModelStepPurpose.REPAIR,
        (
            Message("system", repair_prompt(usable, _failures(checked))),
            Message("user", draft.model_dump_json()),
        ),
        json_schema=DRAFT_SCHEMA,
    )
    try:
        text = ctx.call_model(request).text
    except ModelOutputTooLarge as error:  # refused whole, unread: no repaired draft
        ctx.run.refuse_draft(ModelStepPurpose.REPAIR, error.length, error.sha256)
        ctx.journal.record()
        return draft, checked
    except ModelError:
        return draft, checked
    repaired = record_draft(ctx, ModelStepPurpose.REPAIR, text)  # DRAFT_PROPOSED, parsed
    if isinstance(repaired, DraftError) or repaired.conclusion is None:
        return draft, checked
    return repaired, _check_draft(guard, repaired)


def _publish(
    ctx: ReleaseContext,
    guard: EvidenceGuard,
    kind: FallbackType,
    facts: Iterable[Fact],
    missing: Iterable[MissingOut],
) -> Publication:
    """A fallback: the records behind proven facts, empty scopes, failed checks, what is missing."""
    cited = [c for fact in facts for c in fact.citations]

    def source(reference: str) -> tuple[str, str, str] | None:
        found = guard.resolve(reference)
        return None if found is None else (found[0], shown(ctx, found[1]), found[2])

    content = fallback(ctx, kind, observations(cited, source), missing)
    return publish(ctx, ReleaseOutcome.FALLBACK, kind, content)


def _failures(checked: Checked) -> str:
    return "; ".join(
        f"{r.statement} cites {r.reference or '(nothing)'}: {r.problem.value}"
        for r in checked.rejected
    )[:2000]


def _facts_of(checked: Checked, draft: DiagnosisDraft) -> tuple[Fact, ...]:
    """The draft's facts that passed (the conclusion is judged on its own)."""
    assert draft.conclusion is not None
    conclusion = draft.conclusion.to_fact()
    return tuple(f for f in checked.passed if f != conclusion)


def _content(guard: EvidenceGuard, reference: str) -> str | None:
    found = guard.resolve(reference)
    return None if found is None else found[2]


def _fact(judged: JudgedStatement) -> Fact:
    return Fact(judged.statement, judged.citations)


def _unique(facts: Iterable[Fact]) -> tuple[Fact, ...]:
    return tuple(dict.fromkeys(facts))
