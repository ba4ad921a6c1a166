"""The OpenAI-compatible model provider: chat completions through the official ``openai`` client.

Works with any server speaking ``POST {base_url}/chat/completions`` (OpenAI, vLLM, Ollama,
DeepSeek, …). The client never retries (``max_retries=0`` by default): the harness owns retries and
deadlines. Every failure becomes a :class:`~application.ports.ModelError` whose message names the
status and the provider's message but never a configured secret
(:mod:`infrastructure.openai_errors`); :mod:`infrastructure.openai_wire` shapes requests and
answers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import openai

from infrastructure.openai_errors import Failures
from infrastructure.openai_wire import message_param, response_format, to_response, tool_param

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

    from openai import Omit

    from application.ports import ModelRequest, ModelResponse
    from infrastructure.settings import Settings


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
        self._failures = Failures(base_url=base_url, api_key=api_key, model=model)
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
        messages = [message_param(i, m) for i, m in enumerate(request.messages)]
        try:
            completion: object = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                tools=[tool_param(spec) for spec in request.tools] or openai.omit,
                response_format=response_format(request.json_schema),
                timeout=timeout,
                extra_headers=self._headers,
            )
        except openai.APIError as error:
            raise self._failures.translate(error, timeout) from None
        except json.JSONDecodeError as error:
            raise self._failures.not_json(error) from None
        return to_response(completion, self._failures)
