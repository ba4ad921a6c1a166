"""Answers to the troubleshooting questions of SPEC §15 for one run, from its event streams alone.

Reads the run's Run stream, its Collection stream and the ToolInvocation streams the run charged
for (a tool call's ``BUDGET_CHARGED`` names its invocation), never a projection. Every answer names
the events it rests on by stream id and version, so it can be checked against an export of the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, assert_never
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from application.store import events_of
from domain.catalogue import event_type_name
from domain.collection import Collection
from domain.errors import UnknownAggregateError
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    CompletionReason,
    DiagnosisStopReason,
    EvidenceStatus,
    FailureCode,
    FallbackType,
    InformationGain,
    Intent,
    InvocationStatus,
    ModelStepOutcome,
    ModelStepPurpose,
    ReleaseOutcome,
    RunState,
    TerminationReason,
)
from domain.tool_invocation import ToolInvocation

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from enum import Enum

    from application.store import HarnessStore

E = TypeVar("E")
FieldValue = str | int | bool | None | list[str]

QUESTIONS: dict[str, str] = {
    "why_fallback": "why did the user get a fallback",
    "why_stopped_calling_tools": "why did the agent stop calling tools",
    "why_no_evidence": "why did a tool give no evidence",
    "timed_out_or_budget_exhausted": "timed out or budget exhausted",
    "success_without_conclusion": "status=SUCCESS but no conclusion",
    "why_no_done": "why no SSE `done`",
    "why_no_previous_turn": "why no previous-turn context next time",
}
"""The SPEC §15 questions in the table's order: machine key → the SPEC's wording."""

SHOWN = 3
"""How many tool problems an answer names in words; its fields list all of them."""


class EventRef(BaseModel):
    """One event an answer rests on, named by its stream and version (not by log position)."""

    model_config = ConfigDict(frozen=True)

    stream_id: UUID
    stream_version: int
    event_type: str
    timestamp: datetime


class Answer(BaseModel):
    """One SPEC §15 question answered for one run, with the values and events it rests on."""

    question: str
    asked: str
    applies: bool
    answer: str
    fields: dict[str, FieldValue]
    evidence: list[EventRef]


class BudgetUse(BaseModel):
    """One hard budget: how much of its limit the run used."""

    kind: str
    used: int
    limit: int


class RunExplanation(BaseModel):
    """A run's identity and outcome, and every SPEC §15 question answered from its log."""

    run_id: UUID
    session_id: str
    query: str
    intent: str | None
    finished: bool
    release_outcome: str | None
    fallback_type: str | None
    termination_state: str | None
    termination_reason: str | None
    stop_reason: str | None
    duration_ms: int | None
    budget: list[BudgetUse]
    answers: list[Answer]


@dataclass(frozen=True)
class _Log:
    """The run's streams, each cut at the version its aggregate was rebuilt from."""

    run: Run
    run_events: list[Any]
    collection: Collection | None
    collection_events: list[Any]
    invocations: list[tuple[ToolInvocation, list[Any]]]

    def of(self, *classes: type[Any]) -> list[Any]:
        """The Run and Collection events of the given classes, each stream in order."""
        return [e for e in (*self.run_events, *self.collection_events) if isinstance(e, classes)]

    def last(self, cls: type[E]) -> E | None:
        """The latest event of one class, if any."""
        found: list[E] = self.of(cls)
        return found[-1] if found else None

    @property
    def stop_reason(self) -> DiagnosisStopReason | None:
        """Why evidence collection stopped, if it did."""
        return self.collection.stop_reason if self.collection else None


def explain_run(store: HarnessStore, run_id: UUID) -> RunExplanation:
    """Answer every SPEC §15 question for one run from its events.

    Raises:
        UnknownAggregateError: there is no run with this id.
    """
    log = _read(store, run_id)
    run, term, finished = log.run, log.run.termination, log.last(Run.RunFinished)
    return RunExplanation(
        run_id=run.id,
        session_id=run.session_id,
        query=run.query,
        intent=_v(run.intent),
        finished=run.is_finished,
        release_outcome=_v(run.finished_outcome),
        fallback_type=_v(_fallback_type(run)),
        termination_state=_v(term.state if term else None),
        termination_reason=_v(term.reason if term else None),
        stop_reason=_v(log.stop_reason),
        duration_ms=finished.duration_ms if finished else None,
        budget=[
            BudgetUse(kind=k.value, used=run.usage.get(k), limit=run.limits.get(k))
            for k in BudgetKind
        ],
        answers=[answer(log) for answer in _ANSWERS],
    )


def _read(store: HarnessStore, run_id: UUID) -> _Log:
    run = store.get_run(run_id)
    run_events = events_of(store, run_id)[: run.version]
    try:
        collection: Collection | None = store.get_collection(run_id)
    except UnknownAggregateError:
        collection = None
    collection_events = events_of(store, collection.id)[: collection.version] if collection else []
    invocations: list[tuple[ToolInvocation, list[Any]]] = []
    for key in _invocation_ids(run_events, collection_events):
        try:
            invocation = store.get_invocation(key)
        except UnknownAggregateError:
            continue  # charged in a transaction whose begin was never stored
        if invocation.run_id == run_id:
            invocations.append((invocation, events_of(store, key)[: invocation.version]))
    return _Log(run, run_events, collection, collection_events, invocations)


def _invocation_ids(run_events: list[Any], collection_events: list[Any]) -> list[UUID]:
    """Invocation ids in order of first mention: tool-call charges, then harness gain records."""
    found: dict[UUID, None] = {}
    for event in run_events:
        if isinstance(event, Run.BudgetCharged) and event.kind is BudgetKind.TOOL_CALLS:
            try:
                found.setdefault(UUID(event.ref))
            except ValueError:
                continue
    for event in collection_events:
        if isinstance(event, Collection.ToolProgress) and event.invocation_id is not None:
            found.setdefault(event.invocation_id)
    return list(found)


# -- one function per question (SPEC §15, in the table's order) ---------------------------------


def _why_fallback(log: _Log) -> Answer:
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


def _why_stopped_calling_tools(log: _Log) -> Answer:
    collection, rejected = log.collection, log.of(Run.ToolRequestRejected)
    fields: dict[str, FieldValue] = {
        "stop_reason": _v(log.stop_reason),
        "collection_state": _v(collection.state if collection else None),
        "stop_required_delivered": bool(collection and collection.stop_required_delivered),
        "tool_calls": log.run.usage.tool_calls,
        "rejected_tool_requests": [_rejection(e) for e in rejected],
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


def _why_no_evidence(log: _Log) -> Answer:
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


def _timed_out_or_budget_exhausted(log: _Log) -> Answer:
    run, term = log.run, log.run.termination
    exhausted, finished = log.last(Run.BudgetExhausted), log.last(Run.RunFinished)
    fields: dict[str, FieldValue] = {
        "termination_state": _v(term.state if term else None),
        "termination_reason": _v(term.reason if term else None),
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


def _success_without_conclusion(log: _Log) -> Answer:
    run, outcome = log.run, log.run.finished_outcome
    status = _STATUS[outcome] if outcome else "RUNNING"
    content = run.published or {}
    conclusion = content.get("conclusion") if outcome is ReleaseOutcome.SUCCESS else None
    fields: dict[str, FieldValue] = {
        "status": status,
        "release_outcome": _v(outcome),
        "content_kind": str(content["kind"]) if "kind" in content else None,
        "fallback_type": _v(_fallback_type(run)),
        "has_conclusion": isinstance(conclusion, str),
        "intent": _v(run.intent),
    }
    evidence = [log.last(Run.ReleaseDecision), log.last(Run.RunFinished)]
    key, handled = "success_without_conclusion", "status=SUCCESS means handled with safe content"
    if isinstance(conclusion, str):
        text = f"Does not apply: the release published a diagnosis concluding {conclusion!r}."
        return _answer(key, False, text, fields, evidence)
    if status != "SUCCESS":
        ended = f"the run {_ended(run)}" if run.is_finished else "the run has not finished"
        text = f"Does not apply: the status is {status}, not SUCCESS, because {ended}."
        return _answer(key, False, text, fields, evidence)
    if outcome is ReleaseOutcome.FALLBACK:
        text = (
            f"{handled}, not a conclusion: the release published a FALLBACK of type "
            f"{_v(_fallback_type(run))}, which never carries the unverified conclusion."
        )
    else:
        text = (
            f"{handled}, not a conclusion: the query was routed to {_v(run.intent)}, so the "
            "release published an answer; only a DIAGNOSIS publishes a conclusion."
        )
    return _answer(key, True, text, fields, evidence)


def _why_no_done(log: _Log) -> Answer:
    run, term, finished = log.run, log.run.termination, log.last(Run.RunFinished)
    cancelled = term is not None and term.state is RunState.CANCELLED
    disconnected = cancelled and run.cancellation is CancellationReason.CLIENT_DISCONNECTED
    open_feed = finished is None and not cancelled
    fields: dict[str, FieldValue] = {
        "sse_session_state": (
            "DISCONNECTED" if disconnected else "OPEN" if open_feed else "TERMINAL"
        ),
        "done_sent": finished is not None and not cancelled,
        "terminal_sse_event": None if finished is None else "failure" if cancelled else "done",
        "release_outcome": _v(run.finished_outcome),
        "cancellation_reason": _v(run.cancellation),
    }
    evidence = [*log.of(Run.CancellationRequested, Run.RunTerminated), finished]
    if term is not None and cancelled:
        gone = " The client had already gone, so nothing more was sent." if disconnected else ""
        text = (
            f"The run was CANCELLED ({_reason(term.reason)}), and a cancelled run ends its public "
            f"stream with a `failure`, never a `done`: CANCELLED is not a public outcome.{gone}"
        )
        return _answer("why_no_done", True, text, fields, evidence)
    if finished is None:
        text = (
            f"No `done` yet: the run is {run.state.value} and has not finished; `done` is sent "
            "only once RUN_FINISHED is recorded."
        )
        return _answer("why_no_done", True, text, fields, [*evidence, log.run_events[-1]])
    outcome = finished.release_outcome
    body = "`failure`" if outcome is ReleaseOutcome.FAILED else "`content`"
    text = (
        f"A `done` was sent: the run finished with ReleaseOutcome {outcome.value}, so its stream "
        f"ended with {body} then `done({outcome.value})`. A client that saw no `done` lost its "
        "connection first (send failures are not in the run's log) and can resume the stream."
    )
    return _answer("why_no_done", False, text, fields, evidence)


def _why_no_previous_turn(log: _Log) -> Answer:
    run, context = log.run, log.run.previous_turn
    fields: dict[str, FieldValue] = {
        "intent": _v(run.intent),
        "release_outcome": _v(run.finished_outcome),
        "published_result": context is not None,
        "previous_turn": context,
    }
    evidence = [*log.of(Run.RoutingDecision, Run.ReleaseDecision), log.last(Run.RunFinished)]
    if context is not None:
        text = (
            "Does not apply: this DIAGNOSIS run's release published SUCCESS, so its conclusion "
            f"{context!r} is the context of the session's next turn."
        )
        return _answer("why_no_previous_turn", False, text, fields, evidence)
    text = (
        f"This run gives the next turn no context because {_no_context(run)}; only the published "
        "result of a DIAGNOSIS run whose ReleaseOutcome is SUCCESS becomes previous-turn context."
    )
    return _answer("why_no_previous_turn", True, text, fields, evidence)


_ANSWERS: tuple[Callable[[_Log], Answer], ...] = (
    _why_fallback,
    _why_stopped_calling_tools,
    _why_no_evidence,
    _timed_out_or_budget_exhausted,
    _success_without_conclusion,
    _why_no_done,
    _why_no_previous_turn,
)


# -- causes, in words ------------------------------------------------------------------------------

_RELEASE_EVENTS = (
    Run.EvidenceGuardInitial,
    Run.EvidenceRepair,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardAttempt,
    Run.SemanticGuardDecision,
    Run.ReleaseDecision,
)
_STATUS = {
    ReleaseOutcome.SUCCESS: "SUCCESS",
    ReleaseOutcome.FALLBACK: "SUCCESS",
    ReleaseOutcome.FAILED: "FAILED",
    ReleaseOutcome.CANCELLED: "CANCELLED",
}
"""SPEC §12's status by ReleaseOutcome: SUCCESS means "handled with safe content"."""

_REASON_WORDS: dict[TerminationReason, str] = {
    CompletionReason.COMPLETED: "the release was decided and the run completed",
    CancellationReason.CLIENT_DISCONNECTED: "the client disconnected",
    CancellationReason.USER_REQUESTED: "a user asked to cancel it",
    CancellationReason.DEADLINE_EXCEEDED: "its deadline passed",
    CancellationReason.BUDGET_EXHAUSTED: "a hard budget was exceeded",
    CancellationReason.INTERNAL_FAILURE: "an internal failure cancelled it",
    FailureCode.ROUTING_FAILED: "the router gave no usable intent",
    FailureCode.MODEL_FAILED: "a model call failed and there was no verified progress to publish",
    FailureCode.INVALID_DRAFT: "the agent's draft was invalid and there was no verified progress",
    FailureCode.NO_SAFE_CONTENT: "Release found nothing safe to publish",
    FailureCode.INTERNAL_ERROR: "an unexpected internal error",
    FailureCode.WORKER_LOST: "the worker executing it was lost",
}
"""Every termination reason in plain words (SPEC §4, §5)."""


def _cause(log: _Log, kind: FallbackType) -> str:
    initial, recheck = log.last(Run.EvidenceGuardInitial), log.last(Run.EvidenceGuardRecheck)
    match kind:
        case FallbackType.MISSING_REQUIRED_CONTEXT:
            missing = "; ".join(_published_list(log.run, "missing_info"))
            return (
                "the agent drafted no conclusion and no fact could be verified, but it named the "
                f"missing information ({missing})"
            )
        case FallbackType.INSUFFICIENT_EVIDENCE:
            facts = initial.verified_facts if initial else 0
            return f"{_why_no_conclusion(log)}, so only {facts} verified fact(s) were published"
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
            why = decision.unavailable if decision else "no decision recorded"
            return f"the semantic judge gave no verdict ({why}), so the conclusion was withheld"
        case _:
            assert_never(kind)


def _why_no_conclusion(log: _Log) -> str:
    exhausted, step = log.last(Run.BudgetExhausted), _last_agent_step(log)
    if exhausted is not None:
        return f"{_spent(exhausted)} before a conclusion could be released"
    if log.stop_reason is not None:
        return f"evidence collection stopped ({log.stop_reason.value}) before any conclusion"
    if step is not None and step.outcome is ModelStepOutcome.FAILED:
        return f"the agent's last model call failed ({step.detail})"
    return "the agent's final answer held no usable conclusion"


def _stop_cause(
    log: _Log, collection: Collection, reason: DiagnosisStopReason
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


def _loop_end(log: _Log) -> tuple[bool, str, list[Any]]:
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
    if run.termination and run.termination.reason is FailureCode.INVALID_DRAFT:
        text = f"{none}: {after}, the agent's final answer was not a valid draft."
        return True, text, [step, guard, log.last(Run.RunTerminated)]
    exhausted = log.last(Run.BudgetExhausted)
    later = (
        f" Its {exhausted.kind.value} budget ran out only later, in Release." if exhausted else ""
    )
    draft = "with a conclusion" if guard.has_conclusion else "without a conclusion"
    text = (
        f"{none}: the agent stopped by itself {after}, answering with its final draft "
        f"({draft}) instead of another tool request.{later}"
    )
    return True, text, [step, guard]


def _no_loop(log: _Log) -> str:
    run, routing = log.run, log.last(Run.RoutingDecision)
    if run.intent is not None and run.intent is not Intent.DIAGNOSIS:
        return f"The agent loop never ran: the query was routed to {run.intent.value}."
    if routing is not None and routing.error:
        return f"The agent loop never ran: routing failed ({routing.error})."
    if run.termination is not None:
        return f"The agent loop never ran: the run {_ended(run)} before it began."
    return "The agent loop has not started yet: the run is still RUNNING."


def _no_fallback(log: _Log) -> str:
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


def _why_empty(log: _Log, invocation: ToolInvocation, events: list[Any]) -> str:
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


def _guard_fields(log: _Log) -> dict[str, FieldValue]:
    initial, recheck = log.last(Run.EvidenceGuardInitial), log.last(Run.EvidenceGuardRecheck)
    decision = log.last(Run.SemanticGuardDecision)
    return {
        "has_conclusion": initial.has_conclusion if initial else None,
        "verified_facts": initial.verified_facts if initial else None,
        "invalid_references": list(initial.invalid_references) if initial else [],
        "recheck_invalid_references": list(recheck.invalid_references) if recheck else [],
        "semantic_verdict": _v(decision.verdict) if decision else None,
        "semantic_unavailable": (decision.unavailable or None) if decision else None,
        "missing_info": _published_list(log.run, "missing_info"),
        "stop_reason": _v(log.stop_reason),
    }


# -- small helpers -------------------------------------------------------------------------------


def _answer(
    key: str, applies: bool, text: str, fields: dict[str, FieldValue], events: Iterable[Any]
) -> Answer:
    refs: dict[tuple[UUID, int], EventRef] = {}
    for event in events:
        if event is not None:
            ref = EventRef(
                stream_id=event.originator_id,
                stream_version=event.originator_version,
                event_type=event_type_name(type(event)),
                timestamp=event.timestamp,
            )
            refs.setdefault((ref.stream_id, ref.stream_version), ref)
    return Answer(
        question=key,
        asked=QUESTIONS[key],
        applies=applies,
        answer=text,
        fields=fields,
        evidence=list(refs.values()),
    )


def _v(member: Enum | None) -> str | None:
    return None if member is None else str(member.value)


def _fallback_type(run: Run) -> FallbackType | None:
    """The decided fallback type while the run is open; once finished, only a published one."""
    published = run.finished_outcome in (None, ReleaseOutcome.FALLBACK)
    return run.release[1] if run.release and published else None


def _ended(run: Run) -> str:
    assert run.termination is not None
    return f"ended {run.termination.state.value} ({_reason(run.termination.reason)})"


def _reason(reason: TerminationReason) -> str:
    return f"{reason.value}: {_REASON_WORDS[reason]}"


def _spent(exhausted: Run.BudgetExhausted) -> str:
    return (
        f"the run's {exhausted.kind.value} budget ran out ({exhausted.used} used, limit "
        f"{exhausted.limit})"
    )


def _last_agent_step(log: _Log) -> Run.AgentModelStep | None:
    steps = [s for s in log.of(Run.AgentModelStep) if s.purpose is ModelStepPurpose.AGENT]
    return steps[-1] if steps else None


def _trailing(events: list[Any], matches: Callable[[Any], bool]) -> list[Any]:
    """The matching events at the end of ``events``, after the last one that does not match."""
    found: list[Any] = []
    for event in events:
        found = [*found, event] if matches(event) else []
    return found


def _published_list(run: Run, key: str) -> list[str]:
    value = (run.published or {}).get(key, [])
    return [str(item) for item in value] if isinstance(value, list) else []


def _rejection(event: Run.ToolRequestRejected) -> str:
    return f"{event.tool}: {event.code.value} ({event.detail})"


def _line(invocation: ToolInvocation) -> str:
    evidence = _v(invocation.evidence_status) or "no evidence status yet"
    code = f", error code {invocation.error_code}" if invocation.error_code else ""
    return (
        f"{invocation.tool} {invocation.normalized_scope} [{invocation.id}]: "
        f"{invocation.status.value} + {evidence}{code}"
    )
