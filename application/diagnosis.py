"""The diagnosis agent loop (SPEC §7, §9): tool calls, the progress protocol, saturation.

It ends in exactly one of two legal shapes — :class:`Completed` (a strictly valid draft) or
:class:`ControlledStop` (saturation, protocol violations or budget) — or raises
:class:`AgentFailure` for every other ending, carrying the kind of failure.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, NoReturn

from application.drafts import (
    DraftError,
    DraftFailure,
    parse_agent_text,
    validate_draft,
)
from application.ports import Message, ModelError, ModelOutputTooLarge, ModelRequest, ToolSpec
from application.prompts import AGENT_SCHEMA, STOP_INSTRUCTION, agent_prompt
from application.proposals import propose
from application.run_aborted import BudgetExhausted, RunAborted
from application.tool_admission import admitted
from domain.errors import ControlledStopError
from domain.states import DraftOutcome, ModelStepPurpose
from domain.tool_states import (
    CollectionState,
    DiagnosisStopReason,
    GainSource,
    InformationGain,
    ToolRejectionCode,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import datetime

    from application.drafts import AgentStep, DiagnosisDraft
    from application.ports import ModelResponse
    from application.run_context import RunContext
    from application.tool_boundary import ToolBoundary


class AgentFault(Enum):
    """How the agent failed when it was not its draft that broke (then: the DraftOutcome)."""

    MODEL_FAILED = "MODEL_FAILED"
    """The model call failed (the run fails MODEL_FAILED)."""
    RUN_ABORTED = "RUN_ABORTED"
    """The run ended while the agent worked (a cancel, the deadline, another writer)."""


FailureKind = DraftFailure | AgentFault
"""Why the agent ended in neither legal shape: a broken draft, or a fault."""


@dataclass(frozen=True)
class Completed:
    """The agent produced a strictly valid draft."""

    draft: DiagnosisDraft


@dataclass(frozen=True)
class ControlledStop:
    """The tool loop stopped in a controlled way; Release decides what is published."""

    reason: DiagnosisStopReason


class AgentFailure(Exception):
    """An ending that is neither shape (SPEC §7); Release may still publish verified progress."""

    def __init__(self, kind: FailureKind, detail: str) -> None:
        """Name the kind of failure."""
        super().__init__(f"{kind.value}: {detail}")
        self.kind: FailureKind = kind


def run_agent(
    ctx: RunContext, boundary: ToolBoundary, query: str, context: str = "", *, now: datetime
) -> Completed | ControlledStop:
    """Drive the agent until it drafts, is stopped, or fails.

    ``now`` is the reference time the prompt gives the model for relative times ("yesterday").
    """
    offered = admitted(boundary.tools.values())  # a refused tool is never shown to the model
    specs = tuple(ToolSpec(t.name, t.description, t.parameters) for t in offered)
    prompt = f"{query}\n\nPrevious diagnosis in this session:\n{context}" if context else query
    messages = [Message("system", agent_prompt(now)), Message("user", prompt)]
    with _fails_if_aborted():
        try:
            return _converse(ctx, boundary, messages, specs)
        except BudgetExhausted:  # a model or tool call spent the last of a budget (SPEC §9)
            return ControlledStop(DiagnosisStopReason.BUDGET_LIMIT_REACHED)


@contextmanager
def _fails_if_aborted() -> Iterator[None]:
    """The run ended while the agent worked (a cancel, the deadline): the agent fails."""
    try:
        yield
    except RunAborted as aborted:
        raise AgentFailure(AgentFault.RUN_ABORTED, str(aborted)) from aborted


def _converse(
    ctx: RunContext, boundary: ToolBoundary, messages: list[Message], specs: tuple[ToolSpec, ...]
) -> Completed | ControlledStop:
    """The agent's turns until it drafts or is stopped; raises RunAborted when the run ended.

    The run's end found by a model or tool call comes out as is: :func:`run_agent` stops the
    agent on :class:`BudgetExhausted` and fails it on any other. One found while the agent's
    progress or draft is recorded fails it whatever the end (:func:`_fails_if_aborted`).
    """
    awaiting_progress = False
    while True:
        response = _step(ctx, messages, specs)
        messages.append(Message("assistant", response.text, tool_calls=response.tool_calls))
        step, problem = parse_agent_text(response.text)
        if awaiting_progress:
            _record_progress(ctx, boundary, step, problem)
            awaiting_progress = False
        if step is not None and step.draft is not None:
            return Completed(_draft(ctx, response.text, step.draft))
        if _deliver_stop_if_saturated(ctx, boundary, messages, response):
            continue  # the tool calls of this answer are not run; the next answer may draft
        if response.tool_calls:
            outcome = _call_tools(ctx, boundary, response, messages)
            if isinstance(outcome, ControlledStop):
                return outcome
            awaiting_progress = outcome
            _deliver_stop_if_saturated(ctx, boundary, messages)  # the agent's one draft chance
            continue
        _fail_unless_drafting(ctx, response.text, problem)


def _step(ctx: RunContext, messages: list[Message], specs: tuple[ToolSpec, ...]) -> ModelResponse:
    request = ModelRequest(ModelStepPurpose.AGENT, tuple(messages), specs, json_schema=AGENT_SCHEMA)
    try:
        return ctx.call_model(request)
    except ModelOutputTooLarge as error:  # refused whole, unread: a draft broken by its size
        _refused_draft(ctx, error)
    except ModelError as error:
        raise AgentFailure(AgentFault.MODEL_FAILED, str(error)) from error


def _record_progress(
    ctx: RunContext, boundary: ToolBoundary, step: AgentStep | None, problem: DraftError | None
) -> None:
    collection = boundary.collection
    if not collection.is_open:
        return
    if step is not None and step.progress is not None:
        facts = tuple(f.to_fact() for f in step.progress.facts)
        gain = InformationGain(step.progress.gain)
        collection.record_gain(gain, GainSource.AGENT, facts)
    else:
        collection.record_violation(
            str(problem) if problem else "the step after a tool result had no progress report"
        )
    _save(ctx, boundary)


def _deliver_stop_if_saturated(
    ctx: RunContext,
    boundary: ToolBoundary,
    messages: list[Message],
    unanswered: ModelResponse | None = None,
) -> bool:
    """Deliver the stop instruction once, right after saturation (SPEC §9).

    Tool calls of ``unanswered`` (the answer that saturated the collection) are answered as not
    run, so the conversation stays well-formed; the agent's next answer is its one chance to draft.
    """
    collection = boundary.collection
    saturated = collection.stop_reason is not None and collection.state is CollectionState.SATURATED
    if not saturated or collection.stop_required_delivered:
        return False
    collection.deliver_stop_required()
    _save(ctx, boundary)
    for call in unanswered.tool_calls if unanswered else ():
        messages.append(Message("tool", "NOT RUN: evidence collection is closed", call.id))
    assert collection.stop_reason is not None
    messages.append(Message("user", STOP_INSTRUCTION.format(reason=collection.stop_reason.value)))
    return True


def _call_tools(
    ctx: RunContext, boundary: ToolBoundary, response: ModelResponse, messages: list[Message]
) -> bool | ControlledStop:
    awaits = False
    for index, call in enumerate(response.tool_calls):
        if index > 0:
            detail = "one tool call per step; this one was not run"
            ctx.run.reject_tool_request(call.name, ToolRejectionCode.INVALID_REQUEST, detail)
            messages.append(Message("tool", f"REJECTED INVALID_REQUEST: {detail}", call.id))
            continue
        try:
            result = boundary.execute(call)
        except ControlledStopError:
            reason = boundary.collection.stop_reason
            return ControlledStop(reason or DiagnosisStopReason.INFORMATION_SATURATED)
        messages.append(Message("tool", result.text, call.id))
        awaits = result.awaits_progress
    return awaits


def _fail_unless_drafting(ctx: RunContext, text: str, problem: DraftError | None) -> None:
    """A final answer (no tool call) that is malformed or empty is a broken draft (SPEC §7)."""
    if problem is not None:
        _failed_draft(ctx, text, problem)
    if not text.strip():
        detail = "the agent answered with neither a tool call nor a draft"
        _failed_draft(ctx, text, DraftError(DraftOutcome.EMPTY_DRAFT, detail))


def _draft(ctx: RunContext, text: str, data: dict[str, object]) -> DiagnosisDraft:
    """The agent's final draft, recorded as proposed (SPEC §7: a broken one is an exception)."""
    try:
        draft = validate_draft(dict(data))
    except DraftError as error:
        _failed_draft(ctx, text, error)
    _propose(ctx, text, draft)
    return draft


def _failed_draft(ctx: RunContext, text: str, error: DraftError) -> NoReturn:
    """Record the broken draft as proposed, then fail with its kind (the draft is discarded)."""
    _propose(ctx, text, error)
    raise AgentFailure(error.kind, str(error)) from error


def _refused_draft(ctx: RunContext, error: ModelOutputTooLarge) -> NoReturn:
    """Record the agent's answer refused TOO_LARGE (its length and hash only), then fail."""
    with _fails_if_aborted():
        ctx.run.refuse_draft(ModelStepPurpose.AGENT, error.length, error.sha256)
        ctx.journal.record()
    raise AgentFailure(DraftOutcome.TOO_LARGE, str(error)) from error


def _propose(ctx: RunContext, text: str, result: DiagnosisDraft | DraftError) -> None:
    with _fails_if_aborted():
        propose(ctx, ModelStepPurpose.AGENT, text, result)


def _save(ctx: RunContext, boundary: ToolBoundary) -> None:
    with _fails_if_aborted():
        ctx.journal.record(boundary.collection)


__all__ = ["AgentFailure", "AgentFault", "Completed", "ControlledStop", "run_agent"]
