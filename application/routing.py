"""Routing (SPEC §3 step 4): one router call names the run's intent, or the run fails.

The router answers ``{"intent": …}``; anything else is recorded as a code and the answer's
length (:mod:`domain.reasons`), never its text, so no diagnostics line echoes the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.drafts import loads_json
from application.ports import Message, ModelError, ModelOutputTooLarge, ModelRequest, model_where
from application.prompts import ROUTE_SCHEMA, ROUTER_PROMPT
from domain.reasons import UnusableAnswer, answer_reason, failed_reason
from domain.redaction import describe_error
from domain.states import ChatApplicationStatus, Intent, ModelStepPurpose

if TYPE_CHECKING:
    from application.run_context import RunContext


class RoutingFailed(Exception):
    """The router gave no usable intent; the message says whose answer and why (a code)."""


def route(ctx: RunContext) -> Intent:
    """Ask the router for the run's intent and record it; raises RoutingFailed without one.

    Why there is none is recorded as a code and the answer's length, never the router's words.
    """
    ctx.check_active()
    ctx.run.change_status(ChatApplicationStatus.ROUTING)
    ctx.run.attempt_routing()
    ctx.journal.record()
    failed: ModelError | None = None
    request = ModelRequest(
        ModelStepPurpose.ROUTE,
        (Message("system", ROUTER_PROMPT), Message("user", ctx.run.query)),
        json_schema=ROUTE_SCHEMA,
    )
    try:
        intent = _intent_of(ctx.call_model(request).text)
    except ModelOutputTooLarge as error:
        intent = answer_reason(UnusableAnswer.TOO_LARGE, error.length)
    except ModelError as error:
        intent, failed = failed_reason(error), error
    if isinstance(intent, str):  # a code and a length, never the router's words
        ctx.run.decide_routing(None, intent)
        ctx.journal.record()
        raise RoutingFailed(_cause(ctx, intent, failed))
    ctx.run.decide_routing(intent)
    ctx.journal.record()
    return intent


def _cause(ctx: RunContext, reason: str, error: ModelError | None) -> str:
    """Why routing failed, naming the provider and model: the call's error, or the reason code."""
    if error is not None:
        return describe_error(error)  # names the provider and server when the adapter does
    return f"the router's answer from {model_where(ctx.provider)} gave no intent: {reason}"


def _intent_of(text: str) -> Intent | str:
    """The intent the router's answer names, or why there is none (a code and a length)."""
    try:
        data = loads_json(text)
    except ValueError:
        return answer_reason(UnusableAnswer.NOT_JSON, len(text))
    if not isinstance(data, dict) or not isinstance(data.get("intent"), str):
        return answer_reason(UnusableAnswer.NO_INTENT, len(text))
    if data["intent"] not in {intent.value for intent in Intent}:
        return answer_reason(UnusableAnswer.UNKNOWN_INTENT, len(text))
    return Intent(data["intent"])
