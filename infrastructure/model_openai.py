"""The OpenAI-compatible model provider: chat completions through the official ``openai`` client.

Works with any server speaking ``POST {base_url}/chat/completions`` (OpenAI, vLLM, Ollama,
DeepSeek, …). The client never retries (``max_retries=0`` by default): the harness owns retries and
deadlines. Every failure becomes a :class:`~application.ports.ModelError` whose message names the
status and the provider's message but never a configured secret: the API key, the base URL's
``user:password@`` and its query values (``?api_key=…`` is sent as a query on every request).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, assert_never
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import openai
from openai.types.chat import ChatCompletionMessage

from application.drafts import loads_json
from application.ports import (
    ModelError,
    ModelRefusedError,
    ModelResponse,
    ModelTimeoutError,
    ModelUnavailableError,
    ToolCall,
    Usage,
)
from domain.redaction import HIDDEN

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

    from openai import Omit
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
    )
    from openai.types.chat.completion_create_params import ResponseFormat

    from application.ports import JSON, Message, ModelRequest, ToolSpec
    from infrastructure.settings import Settings

_DETAIL_LIMIT = 300
"""Characters of a provider's error text kept in our messages."""

_STATUS_HINTS = {
    400: "the server rejected the request; it may not support tools or json_schema output",
    401: "check HARNESS_OPENAI_API_KEY",
    403: "the key may not use this model; check HARNESS_OPENAI_API_KEY and HARNESS_OPENAI_MODEL",
    404: "check HARNESS_OPENAI_MODEL and HARNESS_OPENAI_BASE_URL (it usually ends in /v1)",
    422: "the server rejected the request; it may not support tools or json_schema output",
    429: "the provider is rate limiting; retry later or lower the load",
}
_SERVER_FAILED = "the server failed; retry later"
_SHORTEST_SECRET = 4
"""Configured values shorter than this are not blanked out of messages (too likely elsewhere)."""


class OpenAICompatibleProvider:
    """A :class:`~application.ports.ModelProvider` backed by an OpenAI-compatible server."""

    name = "openai-compatible"
    blocking = True

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_s: float,
        max_retries: int = 0,
    ) -> None:
        """Build the client; an empty ``api_key`` sends no Authorization header."""
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be zero or more, got {max_retries!r}")
        self.model = model
        self.timeout_s = timeout_s
        parts = urlsplit(base_url)
        self._secrets = _secrets(api_key, base_url)
        self._where = f"model {model!r} at {_shown(base_url)}"
        # Keyless servers (a local vLLM or Ollama): the client insists on a key at construction,
        # so give it a placeholder and drop the Authorization header from every request.
        self._headers: Mapping[str, str | Omit] = {} if api_key else {"Authorization": openai.omit}
        self._client = openai.OpenAI(
            api_key=api_key or "no-key",
            # The client appends paths to the base URL as text: a query would swallow them.
            base_url=urlunsplit(parts._replace(query="", fragment="")),
            default_query=dict(parse_qsl(parts.query, keep_blank_values=True)) or None,
            timeout=timeout_s,
            max_retries=max_retries,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleProvider:
        """The provider configured by ``HARNESS_OPENAI_*`` and ``HARNESS_MODEL_TIMEOUT``."""
        return cls(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key.get_secret_value(),
            model=settings.openai_model,
            timeout_s=settings.model_timeout,
        )

    def close(self) -> None:
        """Close the HTTP connections; the provider is unusable afterwards."""
        self._client.close()

    def __enter__(self) -> OpenAICompatibleProvider:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request or raise a :class:`~application.ports.ModelError` subclass."""
        timeout = min(request.timeout_s, self.timeout_s)
        messages = [_message_param(i, m) for i, m in enumerate(request.messages)]
        try:
            completion: object = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                tools=[_tool_param(spec) for spec in request.tools] or openai.omit,
                response_format=_response_format(request.json_schema),
                timeout=timeout,
                extra_headers=self._headers,
            )
        except openai.APIError as error:
            raise self._translate(error, timeout) from None
        except json.JSONDecodeError as error:
            raise ModelUnavailableError(
                f"{self._where} answered with a body that is not JSON ({error.msg}); "
                "check HARNESS_OPENAI_BASE_URL points at a chat-completions API"
            ) from None
        return self._to_response(completion)

    # -- response -----------------------------------------------------------------------------

    def _to_response(self, completion: object) -> ModelResponse:
        # Without strict validation the client builds models from whatever JSON arrived, so
        # nothing below trusts the static types.
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ModelUnavailableError(
                f"{self._where} answered HTTP 200 without any choices; "
                "check HARNESS_OPENAI_BASE_URL points at a chat-completions API"
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        if not isinstance(message, ChatCompletionMessage):
            raise ModelUnavailableError(
                f"{self._where} answered HTTP 200 with a choice that has no message"
            )
        text = message.content if isinstance(message.content, str) else ""
        raw_calls = message.tool_calls if isinstance(message.tool_calls, list) else []
        if not text and not raw_calls and isinstance(message.refusal, str) and message.refusal:
            raise ModelRefusedError(
                f"{self._where} refused to answer: {self._detail(message.refusal)}"
            )
        finish_reason = getattr(choice, "finish_reason", None)
        return ModelResponse(
            text=text,
            tool_calls=tuple(_tool_call(i, raw) for i, raw in enumerate(raw_calls)),
            usage=_usage(getattr(completion, "usage", None)),
            finish_reason=finish_reason if isinstance(finish_reason, str) else "stop",
        )

    # -- errors -------------------------------------------------------------------------------

    def _translate(self, error: openai.APIError, timeout: float) -> ModelError:
        if isinstance(error, openai.APITimeoutError):
            return ModelTimeoutError(
                f"{self._where} did not answer within {timeout:g} s; "
                "raise HARNESS_MODEL_TIMEOUT or the call's timeout if the model is slow"
            )
        if isinstance(error, openai.APIConnectionError):
            cause = error.__cause__ or error
            return ModelUnavailableError(
                f"{self._where} could not be reached ({self._detail(str(cause))}); "
                "check HARNESS_OPENAI_BASE_URL and that the server is running"
            )
        if isinstance(error, openai.APIStatusError):
            return self._status_error(error)
        return ModelUnavailableError(
            f"{self._where} answered with data that is not a chat completion: "
            f"{self._detail(error.message)}"
        )

    def _status_error(self, error: openai.APIStatusError) -> ModelError:
        status = error.status_code
        text = f"{self._where} answered HTTP {status}: {self._detail(_provider_message(error))}"
        hint = _STATUS_HINTS.get(status, _SERVER_FAILED if status >= 500 else "")
        if hint:
            text = f"{text}; {hint}"
        if isinstance(error, openai.RateLimitError | openai.InternalServerError) or status >= 500:
            return ModelUnavailableError(text)
        return ModelRefusedError(text)

    def _detail(self, text: str) -> str:
        """The provider's text, shortened and with every configured secret blanked out.

        What merely looks like a credential is redacted by :class:`ModelError` itself.
        """
        for secret in self._secrets:
            text = text.replace(secret, HIDDEN)
        text = " ".join(text.split())
        return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 1] + "…"


def _secrets(api_key: str, base_url: str) -> tuple[str, ...]:
    """The configured values no message may show: the key, the URL's userinfo and query values.

    Longest first, so a secret that contains another is blanked out whole.
    """
    parts = urlsplit(base_url)
    # A user name alone is often a token (https://TOKEN@host); beside a password it is not.
    found = {api_key, parts.password or parts.username or ""}
    found |= {value for _, value in parse_qsl(parts.query, keep_blank_values=True)}
    return tuple(sorted((v for v in found if len(v) >= _SHORTEST_SECRET), key=len, reverse=True))


def _shown(url: str) -> str:
    """The URL as messages show it: no ``user:password@``, every query value hidden."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(f"{name}={HIDDEN}" for name, _ in parse_qsl(parts.query, True))
    return urlunsplit(parts._replace(netloc=netloc, query=query, fragment=""))


def _message_param(index: int, message: Message) -> ChatCompletionMessageParam:
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


def _tool_param(spec: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }


def _response_format(schema: JSON | None) -> ResponseFormat | Omit:
    if schema is None:
        return openai.omit
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": dict(schema), "strict": True},
    }


def _tool_call(index: int, raw: object) -> ToolCall:
    """One tool call of the answer; bad arguments are kept as text, never raised."""
    function = getattr(raw, "function", None) or getattr(raw, "custom", None)
    call_id = getattr(raw, "id", None)
    name = getattr(function, "name", None)
    arguments = getattr(function, "arguments", getattr(function, "input", None))
    parsed, raw_text = _parse_arguments(arguments)
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else f"call_{index}",
        name=name if isinstance(name, str) else "",
        arguments=parsed,
        raw_arguments=raw_text,
    )


def _parse_arguments(arguments: object) -> tuple[JSON, str | None]:
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


def _provider_message(error: openai.APIStatusError) -> str:
    """The provider's own words: ``error.message`` of the JSON body, else the raw body."""
    body = error.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(body, str) and body:
        return body
    return error.message
