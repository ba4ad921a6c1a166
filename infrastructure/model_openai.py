"""The OpenAI-compatible model provider: chat completions posted as the official client posts them.

Works with any server speaking ``POST {base_url}/chat/completions`` (OpenAI, vLLM, Ollama,
llama.cpp, DeepSeek, …). The ``openai`` client never retries (``max_retries=0``): this adapter
does, in one place, so every retried attempt is recorded with the model step
(:mod:`infrastructure.model_retries`), all within the call's bound. Every failure becomes a
:class:`~application.ports.ModelError` whose message names the provider, model and server, the
status and the provider's message but never a configured secret
(:mod:`infrastructure.openai_errors`); :mod:`infrastructure.openai_wire` shapes requests and
answers. Completions go through :mod:`infrastructure.openai_http` (one ``httpx`` exchange that
raises the client's own errors); the ``openai`` client lists the server's models.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import openai
import orjson

from application.ports import ModelError, ModelUnavailableError
from infrastructure.endpoints import host_port
from infrastructure.model_config import CREDENTIAL_IN_URL, credential_in_url
from infrastructure.model_retries import RetryPolicy
from infrastructure.openai_errors import Failures
from infrastructure.openai_http import ChatPoster
from infrastructure.openai_wire import message_param, response_format, to_response, tool_param

if TYPE_CHECKING:
    from types import TracebackType

    import httpx

    from application.ports import ModelRequest, ModelResponse
    from domain.values import ModelAttempt
    from infrastructure.settings import Settings


class OpenAICompatibleProvider:
    """A :class:`~application.ports.ModelProvider` backed by an OpenAI-compatible server."""

    name = "openai-compatible"
    blocking = True
    gated = True
    """Each request waits at its send gate right before it is sent, built while the run commits
    (:mod:`application.send_gate`): the client's request hook waits there."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_s: float,
        retries: RetryPolicy | None = None,
    ) -> None:
        """Build the client; an empty ``api_key`` sends no Authorization header.

        ``retries`` says how failed attempts are retried (none when not given). A ``base_url``
        with ``user:password@`` is refused (ValueError): the key is the one credential sent.
        """
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        if credential_in_url(base_url):  # httpx would send it as Basic, over the Bearer key
            raise ValueError(f"HARNESS_OPENAI_BASE_URL {CREDENTIAL_IN_URL}")
        self.model = model
        self.timeout_s = timeout_s
        self.retries = retries or RetryPolicy(max_retries=0)
        self._closed = threading.Event()
        """Set by :meth:`close`: a wait between attempts ends at once."""
        parts = urlsplit(base_url)
        self._failures = Failures(base_url=base_url, api_key=api_key, model=model)
        self.where = self._failures.where
        self._gates = threading.local()
        """The send gate of the call this thread makes (each call is made in one thread)."""
        self._poster = ChatPoster(base_url, api_key, self._at_gate)
        # Keyless servers (a local vLLM or Ollama): the client insists on a key at construction.
        self._client = openai.OpenAI(
            api_key=api_key or "no-key",
            # The client appends paths to the base URL as text: a query would swallow them.
            base_url=urlunsplit(parts._replace(query="", fragment="")),
            default_query=dict(parse_qsl(parts.query, keep_blank_values=True)) or None,
            timeout=timeout_s,
            max_retries=0,  # retried here, recorded (see the module's docstring)
        )
        self._server = host_port(str(self._client.base_url))  # asked at every call

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleProvider:
        """The provider configured by ``HARNESS_OPENAI_*`` and ``HARNESS_MODEL_TIMEOUT``."""
        return cls(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key.get_secret_value(),
            model=settings.openai_model,
            timeout_s=settings.model_timeout,
            retries=RetryPolicy(max_retries=settings.model_max_retries),
        )

    @property
    def server(self) -> tuple[str, int]:
        """The host and port every call goes to (a trace's ``server.address``/``server.port``)."""
        return self._server

    @property
    def client(self) -> openai.OpenAI:
        """The configured ``openai`` client (``harness model check`` lists models with it)."""
        return self._client

    @property
    def http(self) -> httpx.Client:
        """The HTTP client completions are posted with (its hooks see every exchange)."""
        return self._poster.http

    def close(self) -> None:
        """Close the HTTP connections and end any wait; the provider is unusable afterwards."""
        self._closed.set()
        self._poster.close()
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
        """Answer one request or raise a :class:`~application.ports.ModelError` subclass.

        Failed attempts are retried by :attr:`retries` within ``min(request.timeout_s,
        timeout_s)``; the answer, or the error, carries the retried attempts. With a send gate
        in the request, nothing is sent before the gate opens (SendRefused when refused).
        """
        self._gates.gate = request.send_gate
        try:
            return self._attempts(request)
        finally:
            self._gates.gate = None

    def _attempts(self, request: ModelRequest) -> ModelResponse:
        """The answer after as many attempts as :attr:`retries` allows within the bound."""
        timeout = min(request.timeout_s, self.timeout_s)
        end = time.monotonic() + timeout
        body = encoded(self._body(request))
        attempts: list[ModelAttempt] = []
        while True:
            left = max(0.001, end - time.monotonic())
            try:
                completion = self._poster.post(body, left)  # the JSON as it came
            except openai.APIError as error:
                left = end - time.monotonic()  # what the failed attempt left of the bound
                attempt, why = self.retries.next_attempt(error, len(attempts) + 1, left)
                if attempt is None:
                    failure = self._failures.translate(error, timeout, why)
                    raise _with(failure, attempts) from None
                attempts.append(attempt)
                if self._closed.wait(attempt.wait_ms / 1000):
                    closed = ModelUnavailableError(f"{self.where}: the provider was closed")
                    raise _with(closed, attempts) from None
                continue
            except json.JSONDecodeError as error:
                raise _with(self._failures.not_json(error), attempts) from None
            try:
                return replace(to_response(completion, self._failures), attempts=tuple(attempts))
            except ModelError as error:  # a malformed answer: the attempts go with it
                raise _with(error, attempts) from None

    def _at_gate(self, _request: object) -> None:
        """Right before a request is sent: wait until the run lets it leave (SendRefused: never).

        The error passes through the client untouched (it is no transport error), and past the
        retries (no APIError): the call ends there.
        """
        gate = getattr(self._gates, "gate", None)
        if gate is not None:
            gate.wait()

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of a request (``POST /chat/completions``).

        Posted as it is, past ``chat.completions.create``: that method walks every message and
        tool through the SDK's typed-dict transform, which renames nothing in a chat request and
        cost about a millisecond of CPU a call, more than the rest of the call's Python. The
        client still builds, sends, authenticates, times out and types errors as for ``create``.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [message_param(i, m) for i, m in enumerate(request.messages)],
        }
        if request.tools:
            body["tools"] = [tool_param(spec) for spec in request.tools]
        format_ = response_format(request.json_schema)
        if not isinstance(format_, openai.Omit):
            body["response_format"] = format_
        return body


def encoded(body: dict[str, Any]) -> bytes:
    """The body as the JSON bytes the client would send, written by orjson (a tenth of a call).

    The client's own encoder is the standard library's; orjson writes the same compact JSON
    (no ASCII escaping) for what a chat body holds. A body it refuses (a key that is not text,
    say) is written by the standard library, as the client would.
    """
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _with(error: ModelError, attempts: list[ModelAttempt]) -> ModelError:
    """``error`` carrying the retried attempts."""
    error.attempts = tuple(attempts)
    return error
