"""Causes in words: why a fallback, why the loop stopped or never ran, why a tool gave nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_never

from application.explain.drafts import _draft_fields, _failed, _last_draft, _proposed
from application.explain.words import (
    _ended,
    _fallback_type,
    _missing_info,
    _spent,
    _trailing,
    _v,
)
from domain.collection import Collection
from domain.reasons import shown_reason
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import FailureCode, Intent, ModelStepOutcome, ModelStepPurpose
from domain.tool_invocation import ToolInvocation
from domain.tool_states import DiagnosisStopReason, InformationGain, InvocationStatus

if TYPE_CHECKING:
    from application.explain.log import RunStreams
    from application.explain.model import FieldValue


def _cause(log: RunStreams, kind: FallbackType) -> str:
    initial, recheck = log.last(Run.EvidenceGuardInitial), log.last(Run.EvidenceGuardRecheck)
    match kind:
        case FallbackType.MISSING_REQUIRED_CONTEXT:
            missing = "; ".join(_missing_info(log.run))
            return (
                "the agent drafted no conclusion and no fact could be verified, but it named the "
                f"missing information ({missing})"
            )
        case FallbackType.INSUFFICIENT_EVIDENCE:
            facts = initial.verified_facts if initial else 0
            return f"{_why_no_conclusion(log)}; only {facts} verified fact(s) were published"
        case FallbackType.EVIDENCE_VALIDATION_FAILED:
            first = ", ".join(initial.invalid_references) if initial else ""
            again = ", ".join(recheck.invalid_references) if recheck else ""
            return (
                f"the conclusion cited references that are not READY + EVIDENCE_FOUND invocations "
                f"of this run ({first}), and after the one repair it still cited ({again})"
            )
        case FallbackType.SEMANTIC_UNSUPPORTED:
            return "the semantic judge ruled that the evidence does not support the conclusion"
        case FallbackType.SEMANTIC_UNAVAILABLE:
            decision = log.last(Run.SemanticGuardDecision)
            why = shown_reason(decision.unavailable) if decision else "no decision recorded"
            return (
                f"the semantic judge gave no verdict ({why}{_judge_failure(log)}),"
                " so the conclusion was withheld"
            )
        case _:
            assert_never(kind)


def _why_no_conclusion(log: RunStreams) -> str:
    exhausted, step = log.last(Run.BudgetExhausted), _last_agent_step(log)
    if exhausted is not None:
        return f"{_spent(exhausted)} before a conclusion could be released"
    if log.stop_reason is not None:
        return f"evidence collection stopped ({log.stop_reason.value}) before any conclusion"
    if step is not None and step.outcome is ModelStepOutcome.FAILED:
        return f"the agent's last model call failed ({step.detail})"
    draft = _last_draft(log)
    return _proposed(draft) if draft else "the agent's final answer held no usable conclusion"


def _stop_cause(
    log: RunStreams, collection: Collection, reason: DiagnosisStopReason
) -> tuple[str, list[Any]]:
    told = ", and the agent was told to draft now" if collection.stop_required_delivered else ""
    match reason:
        case DiagnosisStopReason.INFORMATION_SATURATED:
            no_gain = _trailing(
                log.of(Collection.ToolProgress), lambda e: e.gain is InformationGain.NO_GAIN
            )
            text = (
                f"Evidence collection became SATURATED: {len(no_gain)} tool results in a row "
                f"brought no new information (threshold {collection.no_gain_threshold}), so no "
                f"further tool could run{told}."
            )
            return text, no_gain
        case DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED:
            violations = _trailing(
                log.of(Collection.ToolProgress, Collection.ProgressProtocolViolation),
                lambda e: isinstance(e, Collection.ProgressProtocolViolation),
            )
            last = violations[-1].detail if violations else ""
            text = (
                f"Evidence collection stopped with PROGRESS_PROTOCOL_VIOLATED: {len(violations)} "
                f"agent steps in a row broke the progress protocol (threshold "
                f"{collection.violation_threshold}; last: {last}), so no further tool could run"
                f"{told}."
            )
            return text, violations
        case DiagnosisStopReason.BUDGET_LIMIT_REACHED:
            exhausted = log.last(Run.BudgetExhausted)
            spent = _spent(exhausted) if exhausted else "the run's budget ran out"
            text = f"{spent[0].upper()}{spent[1:]}, which stopped evidence collection with "
            text += "BUDGET_LIMIT_REACHED and terminated the run BUDGET_EXHAUSTED."
            return text, log.of(Run.BudgetExhausted, Run.RunTerminated)
        case _:
            assert_never(reason)


def _loop_end(log: RunStreams) -> tuple[bool, str, list[Any]]:
    """Why the loop ended without a stop reason: the run ended, the agent failed, or drafted."""
    run, guard, step = log.run, log.last(Run.EvidenceGuardInitial), _last_agent_step(log)
    none, calls = "No stop reason was recorded", run.usage.tool_calls
    after = f"after {calls} tool call(s)" if calls else "without calling any tool"
    if guard is None and run.termination is None:
        return False, "The agent has not stopped: the run is still RUNNING.", []
    if guard is None:
        text = f"{none}: the run {_ended(run)} while the agent was still working ({after})."
        return True, text, log.of(Run.CancellationRequested, Run.RunTerminated)
    if step is not None and step.outcome is ModelStepOutcome.FAILED:
        return True, f"{none}: the agent's model call failed ({step.detail}) {after}.", [step]
    draft = _last_draft(log)
    if _failed(draft) or (run.termination and run.termination.reason is FailureCode.INVALID_DRAFT):
        said = _proposed(draft) if draft else "the agent's final answer was not a valid draft"
        text = f"{none}: the agent stopped by itself {after}, but {said}."
        return True, text, [step, draft, guard, log.last(Run.RunTerminated)]
    exhausted = log.last(Run.BudgetExhausted)
    later = (
        f" Its {exhausted.kind.value} budget ran out only later, in Release." if exhausted else ""
    )
    held = "with a conclusion" if guard.has_conclusion else "without a conclusion"
    said = f": {_proposed(draft)}" if draft else f" ({held})"
    text = (
        f"{none}: the agent stopped by itself {after}, answering with its final draft instead of "
        f"another tool request{said}.{later}"
    )
    return True, text, [step, draft, guard]


def _no_loop(log: RunStreams) -> str:
    run, routing = log.run, log.last(Run.RoutingDecision)
    if run.intent is not None and run.intent is not Intent.DIAGNOSIS:
        return f"The agent loop never ran: the query was routed to {run.intent.value}."
    if routing is not None and routing.error:
        return f"The agent loop never ran: routing failed ({shown_reason(routing.error)})."
    if run.termination is not None:
        return f"The agent loop never ran: the run {_ended(run)} before it began."
    return "The agent loop has not started yet: the run is still RUNNING."


def _no_fallback(log: RunStreams) -> str:
    run, outcome, initial = log.run, log.run.finished_outcome, log.last(Run.EvidenceGuardInitial)
    if outcome is ReleaseOutcome.SUCCESS:
        what = "a diagnosis" if run.intent is Intent.DIAGNOSIS else f"a {_v(run.intent)} answer"
        return f"No fallback: the release published SUCCESS, {what}."
    if outcome is None:
        return "No fallback (yet): the run has not finished and no release was decided."
    unverified = "; no fact was verified" if initial and not initial.verified_facts else ""
    return f"No fallback: nothing was published because the run {_ended(run)}{unverified}."


def _no_context(run: Run) -> str:
    if not run.is_finished:
        return "it has not finished yet"
    if run.intent is not Intent.DIAGNOSIS:
        return f"it was routed to {run.intent.value}" if run.intent else "routing gave no intent"
    if run.finished_outcome is not ReleaseOutcome.SUCCESS:
        kind = _fallback_type(run)
        of_type = f" of type {kind.value}" if kind else ""
        return f"its ReleaseOutcome is {_v(run.finished_outcome)}{of_type}, never context"
    return "its published result has no conclusion"


def _why_empty(log: RunStreams, invocation: ToolInvocation, events: list[Any]) -> str:
    name = f"{invocation.tool} {invocation.normalized_scope}"
    match invocation.status:
        case InvocationStatus.READY:
            return f"{name} was READY + NO_EVIDENCE (nothing in scope: {invocation.content})"
        case InvocationStatus.ERROR:
            failed = [e for e in events if isinstance(e, ToolInvocation.ToolInvocationFailed)]
            message = failed[-1].message if failed else ""
            return f"{name} ended ERROR with code {invocation.error_code} ({message})"
        case InvocationStatus.PROJECTING:
            ended = f"the run {_ended(log.run)}" if log.run.termination else "it is still running"
            return f"{name} is still PROJECTING: no result was recorded ({ended})"
        case _:
            assert_never(invocation.status)


def _guard_fields(log: RunStreams) -> dict[str, FieldValue]:
    initial, recheck = log.last(Run.EvidenceGuardInitial), log.last(Run.EvidenceGuardRecheck)
    decision = log.last(Run.SemanticGuardDecision)
    return {
        "has_conclusion": initial.has_conclusion if initial else None,
        "verified_facts": initial.verified_facts if initial else None,
        "invalid_references": list(initial.invalid_references) if initial else [],
        "recheck_invalid_references": list(recheck.invalid_references) if recheck else [],
        "semantic_verdict": _v(decision.verdict) if decision else None,
        "semantic_unavailable": _shown(decision.unavailable) if decision else None,
        "missing_info": _missing_info(log.run),
        "stop_reason": _v(log.stop_reason),
        **_draft_fields(log),
    }


def _last_agent_step(log: RunStreams) -> Run.AgentModelStep | None:
    steps = [s for s in log.of(Run.AgentModelStep) if s.purpose is ModelStepPurpose.AGENT]
    return steps[-1] if steps else None


def _judge_failure(log: RunStreams) -> str:
    """How the judge's model call failed, as its step records it ('' when an answer came).

    The call's error, not an answer: the model's words are never in it.
    """
    steps = [s for s in log.of(Run.AgentModelStep) if s.purpose is ModelStepPurpose.JUDGE]
    failed = steps and steps[-1].outcome is ModelStepOutcome.FAILED
    return f": {steps[-1].detail}" if failed else ""


def _shown(reason: str) -> str | None:
    """A recorded reason as a page may show it (a code, never the model's words); None: none."""
    return shown_reason(reason) if reason else None
