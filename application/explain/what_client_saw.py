"""The last three SPEC §15 questions, one function each: what the client and the session saw.

Why status=SUCCESS carries no conclusion, why no SSE `done`, and why the next turn gets no
previous-turn context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.explain.causes import _no_context
from application.explain.words import (
    _answer,
    _ended,
    _fallback_type,
    _published,
    _reason,
    _v,
)
from domain.recorded import conclusion_of
from domain.release import DB_STATUS
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import CancellationReason, DbStatus, RunState, SseSessionState

if TYPE_CHECKING:
    from application.explain.log import RunStreams
    from application.explain.model import Answer, FieldValue


def _success_without_conclusion(log: RunStreams) -> Answer:
    run, outcome = log.run, log.run.finished_outcome
    status = DB_STATUS[outcome] if outcome else DbStatus.RUNNING
    published = _published(run)
    success = outcome is ReleaseOutcome.SUCCESS
    conclusion = conclusion_of(published) if published is not None and success else None
    fields: dict[str, FieldValue] = {
        "status": status.value,
        "release_outcome": _v(outcome),
        "content_kind": published.kind if published is not None else None,
        "fallback_type": _v(_fallback_type(run)),
        "has_conclusion": conclusion is not None,
        "intent": _v(run.intent),
    }
    evidence = [log.last(Run.ReleaseDecision), log.last(Run.RunFinished)]
    key, handled = "success_without_conclusion", "status=SUCCESS means handled with safe content"
    if conclusion is not None:
        text = f"Does not apply: the release published a diagnosis concluding {conclusion!r}."
        return _answer(key, False, text, fields, evidence)
    if status is not DbStatus.SUCCESS:
        ended = f"the run {_ended(run)}" if run.is_finished else "the run has not finished"
        text = f"Does not apply: the status is {status.value}, not SUCCESS, because {ended}."
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


def _why_no_done(log: RunStreams) -> Answer:
    run, term, finished = log.run, log.run.termination, log.last(Run.RunFinished)
    cancelled = term is not None and term.state is RunState.CANCELLED
    disconnected = cancelled and run.cancellation is CancellationReason.CLIENT_DISCONNECTED
    fields: dict[str, FieldValue] = {
        "sse_session_state": _sse_state(finished is not None, cancelled, disconnected).value,
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


def _sse_state(finished: bool, cancelled: bool, disconnected: bool) -> SseSessionState:
    """The state the run's public stream is in, from how the run ended (if it did)."""
    if disconnected:
        return SseSessionState.DISCONNECTED
    if not finished and not cancelled:
        return SseSessionState.OPEN
    return SseSessionState.TERMINAL


def _why_no_previous_turn(log: RunStreams) -> Answer:
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
