"""Every model answer the run used arrived within its bounds, of time and size, from the log.

Each ``AGENT_MODEL_STEP`` records how long the call took and, since version 2, the longest the
harness would wait for it (the model timeout or the run's deadline, whichever came first). An
answer recorded OK that took longer than its bound was waited for past it: a late judge that
decided a SUCCESS showed in the log exactly this way. An answer over the size limit is refused
whole (design §10.1): what the log records of any answer is whole, never a cut prefix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from application.audit.integrity import Violation
from domain.reasons import is_reason
from domain.run import Run
from domain.run_steps import text_sha256
from domain.states import MAX_MODEL_OUTPUT_CHARS, DraftOutcome, ModelStepOutcome, ModelStepPurpose

if TYPE_CHECKING:
    from application.audit.replay import RunLog

RULE = "design §10.1"
"""The rule a record that does not fit breaks: what is recorded is whole, or refused whole."""

SLACK_MS = 1000
"""Scheduling room between the end of the wait and the clock read that records the latency."""


def check_model_bounds(log: RunLog) -> list[Violation]:
    """Each model answer used (outcome OK) took no longer than its recorded bound."""
    found: list[Violation] = []
    for entry in log.of(Run.AgentModelStep):
        step = entry.event
        late = step.bound_ms > 0 and step.latency_ms > step.bound_ms + SLACK_MS
        if step.outcome is ModelStepOutcome.OK and late:
            why = (
                f"uses a {step.purpose.value} answer that took {step.latency_ms} ms, past its"
                f" bound of {step.bound_ms} ms (the model timeout or the deadline)"
            )
            found.append(Violation("design §14", why, entry.record))
        waited = sum(attempt.wait_ms for attempt in step.attempts)
        if step.bound_ms > 0 and waited > step.bound_ms:
            why = (
                f"waited {waited} ms between the attempts of a {step.purpose.value} call, past"
                f" its bound of {step.bound_ms} ms (retries must fit in the call's bound)"
            )
            found.append(Violation("design §14", why, entry.record))
    return found


def check_model_sizes(log: RunLog) -> list[Violation]:
    """Model answers over the size limit were refused whole; every other record of one is whole.

    An ``AGENT_MODEL_STEP`` that read an answer (OK) is within ``MAX_MODEL_OUTPUT_CHARS``, one
    refused TOO_LARGE is over it and kept no text, and a kept text is the answer its length and
    hash describe. A ``DRAFT_PROPOSED`` is the whole text its model step answered (same hash),
    or its refusal (no text, over the limit, the refused step's length and hash). A draft cut to
    :data:`~domain.run_steps.RunSteps.LEGACY_DRAFT_CHARS` was written before the limit: it is
    read as before (the grounding check cannot re-derive a verdict from it).
    """
    found: list[Violation] = []
    answered: dict[ModelStepPurpose, Any] = {}
    for entry in log.of(Run.AgentModelStep, Run.DraftProposed):
        event = entry.event
        if isinstance(event, Run.AgentModelStep):
            answered[event.purpose] = event
            why = _step_problem(event)
        else:
            why = _draft_problem(event, answered.get(event.purpose))
        if why:
            found.append(Violation(RULE, why, entry.record))
    return found


def check_reasons(log: RunLog) -> list[Violation]:
    """Why a router's or judge's answer was unusable is recorded as a code, never its text.

    Only in a run whose model steps record their answers' hashes (the same version of the
    harness that records reasons as codes): older logs recorded the error's words.
    """
    steps = log.of(Run.AgentModelStep)
    if not any(entry.event.sha256 for entry in steps):
        return []
    found: list[Violation] = []
    for entry in log.of(Run.RoutingDecision, Run.SemanticGuardDecision):
        event = entry.event
        reason = event.error if isinstance(event, Run.RoutingDecision) else event.unavailable
        if reason and not is_reason(reason):
            why = (
                f"records why a model's answer was unusable as free text ({len(reason)}"
                " characters), not as a code and a length: the model's words could reach a"
                " diagnostics line"
            )
            found.append(Violation(RULE, why, entry.record))
    return found


def _step_problem(step: Any) -> str | None:
    refused = step.outcome is ModelStepOutcome.TOO_LARGE
    if refused and (step.length <= MAX_MODEL_OUTPUT_CHARS or step.text):
        return f"records a refusal TOO_LARGE of {step.length} characters, or with its text"
    if step.outcome is ModelStepOutcome.OK and step.length > MAX_MODEL_OUTPUT_CHARS:
        return f"reads a {step.purpose.value} answer of {step.length} characters, over the limit"
    if step.text and (len(step.text) != step.length or text_sha256(step.text) != step.sha256):
        return f"records a {step.purpose.value} answer that is not the whole answer it describes"
    return None


def _draft_problem(draft: Any, step: Any) -> str | None:
    matched = step is None or not step.sha256 or step.sha256 == draft.sha256
    if draft.outcome is DraftOutcome.TOO_LARGE:
        over = draft.length > MAX_MODEL_OUTPUT_CHARS and not draft.text
        if not over or not matched or (step is not None and step.length != draft.length):
            return "records a draft refused TOO_LARGE that is not the refused answer"
        return None
    if len(draft.text) < draft.length and len(draft.text) == Run.LEGACY_DRAFT_CHARS:
        return None  # recorded cut before the size limit existed: read as before
    if draft.length > MAX_MODEL_OUTPUT_CHARS:
        return f"records a draft of {draft.length} characters, over the limit, as read"
    whole = len(draft.text) == draft.length and text_sha256(draft.text) == draft.sha256
    if not whole or not matched:
        return "records a draft that is not the whole text the model answered (cut or changed)"
    return None
