"""How the scripted model answers: a scenario's step or answer made into the model's reply.

A spec (a step of ``steps``, or what ``route``, ``answer``, ``repair`` or ``judge`` stands for)
gives ``text`` or ``json``, a step's ``progress``/``draft`` and tool calls, a ``verdicts`` list,
an ``error`` to raise and a ``usage``; ``$N`` in it stands for the id of the N-th tool result.
``pad: N`` appends N spaces to the answer (JSON stays valid): an answer of any size, say over
the size limit, without a scenario file that size. ``judge: offline`` lets the offline model's
judge rule on the scripted answers.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from application.ports import (
    ModelRefusedError,
    ModelTimeoutError,
    ModelUnavailableError,
    ToolCall,
    Usage,
)
from domain.answer_rules import ChatReply
from domain.states import ModelStepPurpose
from infrastructure import model_offline
from infrastructure.model_reply import estimated_usage, invocation_of, reply

if TYPE_CHECKING:
    from application.ports import Message, ModelRequest, ModelResponse

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_REPLIES = frozenset(choice.value for choice in ChatReply)
_ERRORS = {
    "timeout": ModelTimeoutError,
    "unavailable": ModelUnavailableError,
    "refused": ModelRefusedError,
}


OFFLINE_JUDGE = "offline"
"""A scenario's ``judge`` that asks the offline model's judge (deterministic, no network)."""


def spec_of(key: str, value: Any) -> dict[str, Any]:
    """The spec a scenario's ``route``, ``answer``, ``repair`` or ``judge`` value stands for."""
    if key == "answer":
        return _answer_spec(value)
    if isinstance(value, dict):
        return value
    if key == "judge" and value == OFFLINE_JUDGE:
        return {OFFLINE_JUDGE: True}
    if key == "judge":  # a verdict for every statement, or one per statement in order
        return {"verdicts": value}
    return {"json": {"intent": value}} if key == "route" else {"text": str(value)}


def scripted_reply(spec: dict[str, Any], request: ModelRequest) -> ModelResponse:
    """The reply ``spec`` makes to ``request``, or the model error it names."""
    if "error" in spec:
        error = _ERRORS.get(str(spec["error"]), ModelUnavailableError)
        raise error(f"scripted {spec['error']} error")
    ids = _invocation_ids(request.messages)
    if request.purpose is ModelStepPurpose.JUDGE and "verdicts" in spec:
        spec = {**spec, "json": _verdicts(spec["verdicts"], request.messages[-1].content)}
    if request.purpose is ModelStepPurpose.JUDGE and spec.get(OFFLINE_JUDGE):
        spec = {"text": model_offline.judge(request.messages[-1].content)}
    if request.purpose is ModelStepPurpose.REPAIR and "draft" in spec:
        spec = {**spec, "json": spec["draft"]}  # a repair answers with the draft itself
    text = _text(spec, ids) + " " * int(spec.get("pad", 0))
    calls = _tool_calls(spec, ids, len(request.messages))
    given = spec.get("usage") or {}
    estimate = estimated_usage(request, text)
    usage = Usage(
        int(given.get("tokens_in", estimate.tokens_in)),
        int(given.get("tokens_out", estimate.tokens_out)),
    )
    return reply(request, text, calls, usage)


def _verdicts(verdicts: Any, payload: str) -> dict[str, Any]:
    """The judge's answer: ``SUPPORTED`` for every statement, or a list in statement order."""
    count = len(json.loads(payload).get("statements", []))
    given = verdicts if isinstance(verdicts, list) else [verdicts] * count
    return {"verdicts": [{"statement": i, "verdict": str(v)} for i, v in enumerate(given)]}


def _answer_spec(value: Any) -> dict[str, Any]:
    """A SYSTEM_CHAT reply name, a KNOWLEDGE_QUERY ``{statements}``, a spec or raw text.

    A string naming a :class:`ChatReply` answers ``{"reply": name}``; a mapping with
    ``statements`` (or ``reply``) is answered as JSON; any other mapping is a spec like a
    step's (``text``, ``json``, ``error``, ``delay``, ``hang``); any other string is the raw
    answer.
    """
    if isinstance(value, dict):
        return {"json": value} if "statements" in value or "reply" in value else value
    if isinstance(value, str) and value in _REPLIES:
        return {"json": {"reply": value}}
    return {"text": str(value)}


def _invocation_ids(messages: tuple[Message, ...]) -> list[str]:
    """Ids for ``$N``: the conversation's tool results, or the ids a repair request lists."""
    ids = [invocation_of(m.content) or "none" for m in messages if m.role == "tool"]
    if not ids and messages and messages[0].role == "system":
        ids = _UUID.findall(messages[0].content)
    return ids


def _resolve(value: Any, ids: list[str]) -> Any:
    """Replace ``$N`` with the id of the N-th tool result of the conversation."""
    if isinstance(value, str) and re.fullmatch(r"\$\d+", value):
        index = int(value[1:]) - 1
        return ids[index] if 0 <= index < len(ids) else value
    if isinstance(value, list):
        return [_resolve(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, ids) for k, v in value.items()}
    return value


def _text(spec: dict[str, Any], ids: list[str]) -> str:
    if "text" in spec:
        return str(spec["text"])
    if "json" in spec:
        return json.dumps(_resolve(spec["json"], ids))
    body = {k: _resolve(spec[k], ids) for k in ("progress", "draft") if k in spec}
    return json.dumps(body) if body else ""


def _tool_calls(spec: dict[str, Any], ids: list[str], salt: int) -> tuple[ToolCall, ...]:
    """The step's tool call (``tool`` + ``arguments``), or several (``calls: [...]``)."""
    specs = spec.get("calls") or ([spec] if "tool" in spec else [])
    calls = []
    for index, one in enumerate(specs):
        arguments = one.get("arguments", {})
        call_id = f"call_{salt}_{index}"
        if isinstance(arguments, str):
            calls.append(ToolCall(call_id, str(one["tool"]), {}, raw_arguments=arguments))
        else:
            calls.append(ToolCall(call_id, str(one["tool"]), _resolve(arguments, ids)))
    return tuple(calls)
