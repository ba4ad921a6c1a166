"""The first four SPEC §15 questions, one function each: why the run ended as it did.

Why a fallback, why the agent stopped calling tools, why a tool gave no evidence, and whether the
run timed out or exhausted a budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.explain.causes import (
    _cause,
    _guard_fields,
    _loop_end,
    _no_fallback,
    _no_loop,
    _stop_cause,
    _why_empty,
)
from application.explain.drafts import _draft_fields
from application.explain.words import _answer, _ended, _line, _rejection, _spent, _v
from domain.catalogue import GUARD_EVENTS
from domain.collection import Collection
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import RunState
from domain.tool_states import EvidenceStatus, InvocationStatus

if TYPE_CHECKING:
    from application.explain.log import RunStreams
    from application.explain.model import Answer, FieldValue

SHOWN = 3
"""How many tool problems an answer names in words; its fields list all of them."""

_RELEASE_EVENTS = (Run.DraftProposed, *GUARD_EVENTS)


def _why_fallback(log: RunStreams) -> Answer:
    run = log.run
    decided = run.release[1] if run.release else None
    fields: dict[str, FieldValue] = {
        "release_outcome": _v(run.finished_outcome),
        "fallback_type": _v(decided),
        **_guard_fields(log),
    }
    evidence = [*log.of(*_RELEASE_EVENTS), log.last(Run.RunFinished)]
    if decided is None:
        return _answer("why_fallback", False, _no_fallback(log), fields, evidence)
    if run.is_finished and run.finished_outcome is not ReleaseOutcome.FALLBACK:
        text = (
            f"No fallback reached the user: the release decided a FALLBACK of type "
            f"{decided.value}, but the run {_ended(run)} before it was published."
        )
        return _answer("why_fallback", False, text, fields, evidence)
    verb = "published" if run.is_finished else "decided (published when the run finishes)"
    text = f"The release {verb} a FALLBACK of type {decided.value} because {_cause(log, decided)}."
    if decided is FallbackType.INSUFFICIENT_EVIDENCE:
        evidence += log.of(Run.BudgetExhausted, Collection.CollectionStop)
    return _answer("why_fallback", True, text, fields, evidence)


def _why_stopped_calling_tools(log: RunStreams) -> Answer:
    collection, rejected = log.collection, log.of(Run.ToolRequestRejected)
    fields: dict[str, FieldValue] = {
        "stop_reason": _v(log.stop_reason),
        "collection_state": _v(collection.state if collection else None),
        "stop_required_delivered": bool(collection and collection.stop_required_delivered),
        "tool_calls": log.run.usage.tool_calls,
        "rejected_tool_requests": [_rejection(e) for e in rejected],
        **_draft_fields(log),
    }
    if collection is None:
        events = log.of(Run.RoutingDecision, Run.RunTerminated)
        return _answer("why_stopped_calling_tools", False, _no_loop(log), fields, events)
    if collection.stop_reason is None:
        applies, text, events = _loop_end(log)
    else:
        applies, (text, events) = True, _stop_cause(log, collection, collection.stop_reason)
        events += log.of(Collection.CollectionStop, Collection.StopRequiredDelivered)
    return _answer("why_stopped_calling_tools", applies, text, fields, [*events, *rejected])


def _why_no_evidence(log: RunStreams) -> Answer:
    calls, rejected = log.invocations, log.of(Run.ToolRequestRejected)
    empty = [(i, ev) for i, ev in calls if i.evidence_status is not EvidenceStatus.EVIDENCE_FOUND]
    fields: dict[str, FieldValue] = {
        "invocations": [_line(i) for i, _ in calls],
        "evidence_found": len(calls) - len(empty),
        "no_evidence": [_line(i) for i, _ in empty if i.status is InvocationStatus.READY],
        "failed": [_line(i) for i, _ in empty if i.status is InvocationStatus.ERROR],
        "projecting": [_line(i) for i, _ in empty if i.status is InvocationStatus.PROJECTING],
        "rejected_tool_requests": [_rejection(e) for e in rejected],
    }
    problems = [_why_empty(log, i, ev) for i, ev in empty] + [
        f"the request for {e.tool} was rejected at preflight with {e.code.value} ({e.detail}), "
        "so no invocation record exists"
        for e in rejected
    ]
    if not problems:
        text = (
            f"No tool came back empty: all {len(calls)} invocation(s) are READY + EVIDENCE_FOUND."
            if calls
            else "No tool gave an empty result: the run made no tool request."
        )
        return _answer("why_no_evidence", False, text, fields, [ev[-1] for _, ev in calls])
    more = f"; and {len(problems) - SHOWN} more (see fields)" if len(problems) > SHOWN else ""
    text = (
        f"{len(problems)} of {len(calls) + len(rejected)} tool request(s) gave no evidence: "
        f"{'; '.join(problems[:SHOWN])}{more}."
    )
    if fields["no_evidence"]:
        text += " NO_EVIDENCE only says that the scope checked was empty, nothing beyond it."
    evidence = [e for _, ev in empty for e in ev] + rejected
    return _answer("why_no_evidence", True, text, fields, evidence)


def _timed_out_or_budget_exhausted(log: RunStreams) -> Answer:
    run, term = log.run, log.run.termination
    exhausted, finished = log.last(Run.BudgetExhausted), log.last(Run.RunFinished)
    fields: dict[str, FieldValue] = {
        "termination_state": _v(term.state if term else None),
        "termination_reason": _v(term.reason if term else None),
        "failure_cause": run.failure_cause or None,
        "deadline": run.deadline.isoformat(),
        "duration_ms": finished.duration_ms if finished else None,
        "budget_kind": _v(exhausted.kind if exhausted else None),
        "budget_used": exhausted.used if exhausted else None,
        "budget_limit": exhausted.limit if exhausted else None,
        "stop_reason": _v(log.stop_reason),
    }
    events = log.of(Run.BudgetExhausted, Run.RunTerminated, Run.CancellationRequested)
    events += [*log.of(Collection.CollectionStop), finished]
    key = "timed_out_or_budget_exhausted"
    state = term.state if term else RunState.RUNNING
    if state is RunState.TIMED_OUT:
        text = (
            f"TIMED_OUT, not budget exhausted: the run's deadline ({run.deadline.isoformat()}) "
            "passed before it finished, so the deadline check terminated it with reason "
            "DEADLINE_EXCEEDED; no budget was exhausted."
        )
        return _answer(key, True, text, fields, events)
    if state is RunState.BUDGET_EXHAUSTED and exhausted is not None:
        stopped = (
            " and stopped evidence collection (BUDGET_LIMIT_REACHED)" if log.stop_reason else ""
        )
        text = (
            f"BUDGET_EXHAUSTED, not timed out: {_spent(exhausted)}, which terminated the run "
            f"with reason BUDGET_EXHAUSTED{stopped}."
        )
        return _answer(key, True, text, fields, events)
    text = f"Neither: the run {_ended(run)}." if term else "Neither yet: the run is still RUNNING."
    return _answer(key, False, text, fields, log.of(Run.RunTerminated))
