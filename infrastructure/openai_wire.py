"""The chat-completions wire format: our requests as the ``openai`` client's, its answers as ours.

Without strict validation the client builds its models from whatever JSON arrived, so nothing
read from an answer trusts the static types; a tool call's arguments that are not a JSON object
are kept as text (the tool boundary rejects them), never raised.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, assert_never

import openai
from openai.types.chat import ChatCompletionMessage

from application.drafts import loads_json
from application.ports import ModelRefusedError, ModelResponse, ToolCall, Usage

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
    """Our response to a chat completion; a malformed or refused answer raises a ModelError."""
    if isinstance(completion, str):  # a page (HTML, plain text) where a completion belongs
        raise failures.not_a_completion(completion)
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise failures.no_choices()
    choice = choices[0]
    message = getattr(choice, "message", None)
    if not isinstance(message, ChatCompletionMessage):
        raise failures.no_message()
    text = message.content if isinstance(message.content, str) else ""
    raw_calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    if not text and not raw_calls and isinstance(message.refusal, str) and message.refusal:
        raise failures.refused(message.refusal)
    finish_reason = getattr(choice, "finish_reason", None)
    return ModelResponse(
        text=text,
        tool_calls=tuple(_tool_call(i, raw) for i, raw in enumerate(raw_calls)),
        usage=_usage(getattr(completion, "usage", None)),
        finish_reason=finish_reason if isinstance(finish_reason, str) else "stop",
    )


def _tool_call(index: int, raw: object) -> ToolCall:
    """One tool call of the answer; bad arguments are kept as text, never raised."""
    function = getattr(raw, "function", None) or getattr(raw, "custom", None)
    call_id = getattr(raw, "id", None)
    name = getattr(function, "name", None)
    arguments = getattr(function, "arguments", getattr(function, "input", None))
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
    tokens_in = getattr(usage, "prompt_tokens", None)
    tokens_out = getattr(usage, "completion_tokens", None)
    return Usage(
        tokens_in=tokens_in if isinstance(tokens_in, int) else 0,
        tokens_out=tokens_out if isinstance(tokens_out, int) else 0,
    )
