"""The chat-completions wire format: our requests as the ``openai`` client's, its answers as ours.

An answer is read as the JSON that arrived, so nothing read from it trusts a type; a tool call's
arguments that are not a JSON object are kept as text (the tool boundary rejects them), never
raised.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, assert_never

import openai

from application.drafts import loads_json
from application.ports import ModelRefusedError, ModelResponse, ToolCall, Usage
from domain.values import ModelCall

if TYPE_CHECKING:
    from openai import Omit
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
    )
    from openai.types.chat.completion_create_params import ResponseFormat

    from application.ports import JSON, Message, ToolSpec
    from infrastructure.openai_errors import Failures


def message_param(index: int, message: Message) -> ChatCompletionMessageParam:
    """One message of the conversation as the client sends it."""
    match message.role:
        case "system":
            return {"role": "system", "content": message.content}
        case "user":
            return {"role": "user", "content": message.content}
        case "assistant":
            return _assistant_param(message)
        case "tool":
            if message.tool_call_id is None:
                raise ModelRefusedError(
                    f"message {index} has role 'tool' but no tool_call_id; "
                    "a tool result must name the call it answers"
                )
            return {
                "role": "tool",
                "content": message.content,
                "tool_call_id": message.tool_call_id,
            }
        case _:
            assert_never(message.role)


def _assistant_param(message: Message) -> ChatCompletionAssistantMessageParam:
    if not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    calls: list[ChatCompletionMessageFunctionToolCallParam] = [
        {
            "id": call.id,
            "type": "function",
            "function": {
                "name": call.name,
                # Send back exactly what the model wrote when it was not a JSON object.
                "arguments": (
                    call.raw_arguments
                    if call.raw_arguments is not None
                    else json.dumps(dict(call.arguments))
                ),
            },
        }
        for call in message.tool_calls
    ]
    return {"role": "assistant", "content": message.content or None, "tool_calls": calls}


def tool_param(spec: ToolSpec) -> ChatCompletionFunctionToolParam:
    """A tool offered to the model, as a function tool."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }


def response_format(schema: JSON | None) -> ResponseFormat | Omit:
    """A strict ``json_schema`` output format for ``schema``; none without one."""
    if schema is None:
        return openai.omit
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": dict(schema), "strict": True},
    }


def to_response(completion: object, failures: Failures) -> ModelResponse:
    """Our response to a chat completion (its JSON); a malformed or refused one: a ModelError.

    The answer is read as the JSON it arrived as, never through the client's typed models (their
    construction cost a fifth of a call's Python), and nothing in it is trusted to have a type.
    """
    if isinstance(completion, str):  # not sent as JSON: a completion anyway, or a page
        completion = _json_object(completion) or completion
        if isinstance(completion, str):  # a page (HTML, plain text) where a completion belongs
            raise failures.not_a_completion(completion)
    choices = _get(completion, "choices")
    if not isinstance(choices, list) or not choices:
        raise failures.no_choices()
    choice = choices[0]
    message = _get(choice, "message")
    if not isinstance(message, dict):
        raise failures.no_message()
    content, refusal, raw_calls = (message.get(k) for k in ("content", "refusal", "tool_calls"))
    text = content if isinstance(content, str) else ""
    calls = raw_calls if isinstance(raw_calls, list) else []
    if not text and not calls and isinstance(refusal, str) and refusal:
        raise failures.refused(refusal)
    finish_reason = _get(choice, "finish_reason")
    return ModelResponse(
        text=text,
        tool_calls=tuple(_tool_call(i, raw) for i, raw in enumerate(calls)),
        usage=_usage(_get(completion, "usage")),
        finish_reason=finish_reason if isinstance(finish_reason, str) else "stop",
        call=_call(completion, failures),
    )


def _call(completion: object, failures: Failures) -> ModelCall:
    """What the completion says of itself: its id, model, fingerprint and service tier.

    Each as the provider wrote it when it is text, its configured secrets blanked out ('' else).
    """
    said = {
        key: failures.detail(value) if isinstance(value, str) else ""
        for key in ("id", "model", "system_fingerprint", "service_tier")
        for value in (_get(completion, key),)
    }
    return ModelCall(
        response_id=said["id"],
        response_model=said["model"],
        system_fingerprint=said["system_fingerprint"],
        service_tier=said["service_tier"],
    )


def _get(value: object, key: str) -> object:
    """``value[key]`` when ``value`` is a JSON object holding it; else None."""
    return value.get(key) if isinstance(value, dict) else None


def _json_object(text: str) -> dict[str, object] | None:
    """``text`` as a JSON object, or None when it is not one (a page, prose)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _tool_call(index: int, raw: object) -> ToolCall:
    """One tool call of the answer; bad arguments are kept as text, never raised."""
    function = _get(raw, "function") or _get(raw, "custom")
    call_id = _get(raw, "id")
    name = _get(function, "name")
    arguments = _get(function, "arguments")
    if not isinstance(function, dict) or "arguments" not in function:
        arguments = _get(function, "input")
    parsed, raw_text = parse_arguments(arguments)
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else f"call_{index}",
        name=name if isinstance(name, str) else "",
        arguments=parsed,
        raw_arguments=raw_text,
    )


def parse_arguments(arguments: object) -> tuple[JSON, str | None]:
    """The arguments as a JSON object, or ``({}, text)`` when they are not one."""
    if isinstance(arguments, dict):
        return arguments, None
    if not isinstance(arguments, str):
        return {}, "" if arguments is None else str(arguments)
    try:
        value = loads_json(arguments)
    except ValueError:
        return {}, arguments
    if isinstance(value, dict):
        return value, None
    return {}, arguments


def _usage(usage: object) -> Usage:
    tokens_in = _get(usage, "prompt_tokens")
    tokens_out = _get(usage, "completion_tokens")
    return Usage(
        tokens_in=tokens_in if isinstance(tokens_in, int) else 0,
        tokens_out=tokens_out if isinstance(tokens_out, int) else 0,
    )
