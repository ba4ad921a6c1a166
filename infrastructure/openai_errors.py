"""The OpenAI-compatible provider's failures as :class:`~application.ports.ModelError` messages.

Each message names the model and server, the status and the provider's own words, and what to
check; never a configured secret: the API key, the base URL's ``user:password@`` and its query
values (``?api_key=…`` is sent as a query on every request). What merely looks like a credential
is redacted by :class:`~application.ports.ModelError` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import openai

from application.ports import (
    ModelError,
    ModelRefusedError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from domain.redaction import HIDDEN
from domain.redactor import shown_url, url_secrets

if TYPE_CHECKING:
    import json

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
_PAGE_START = 60
"""Characters of a page answered instead of a completion that a message shows."""
_SHORTEST_SECRET = 4
"""Configured values shorter than this are not blanked out of messages (too likely elsewhere)."""
_NOT_CHAT_API = "check HARNESS_OPENAI_BASE_URL points at a chat-completions API"
MALFORMED = "malformed_response"
"""The ``error.type`` of an answer that is not a chat completion (a page, no choices)."""
E = TypeVar("E", bound=ModelError)


def typed(error: E, kind: str) -> E:
    """``error`` with its class for the trace (:attr:`~application.ports.ModelError.error_type`)."""
    error.error_type = kind
    return error


def malformed(message: str) -> ModelUnavailableError:
    """The server answered something that is not a chat completion (``malformed_response``)."""
    return typed(ModelUnavailableError(message), MALFORMED)


class Failures:
    """Words for what went wrong with one configured model and server."""

    def __init__(self, *, base_url: str, api_key: str, model: str) -> None:
        """Remember the secrets to blank out and how messages name the model and server."""
        self._secrets = _secrets(api_key, base_url)
        self.where = f"openai-compatible model {model!r} at {_shown(base_url)}"
        """How every message names the provider, model and server (credentials hidden)."""

    def translate(self, error: openai.APIError, timeout: float, why: str = "") -> ModelError:
        """The model error a failed call of the ``openai`` client stands for.

        ``why`` says why it was not retried (tried too often, no time left), if it says.
        """
        failure = self._translate(error, timeout)
        if why:
            failure = typed(type(failure)(f"{failure}; {why}"), failure.error_type)
        return failure

    def _translate(self, error: openai.APIError, timeout: float) -> ModelError:
        if isinstance(error, openai.APITimeoutError):
            late = ModelTimeoutError(
                f"{self.where} did not answer within {timeout:g} s; "
                "raise HARNESS_MODEL_TIMEOUT or the call's timeout if the model is slow"
            )
            return typed(late, "timeout")
        if isinstance(error, openai.APIConnectionError):
            cause = error.__cause__ or error
            unreached = ModelUnavailableError(
                f"{self.where} could not be reached ({self.detail(str(cause))}); "
                "check HARNESS_OPENAI_BASE_URL and that the server is running"
            )
            return typed(unreached, type(cause).__name__)  # ConnectError, RemoteProtocolError
        if isinstance(error, openai.APIStatusError):
            return typed(self._status_error(error), str(error.status_code))
        return malformed(
            f"{self.where} answered with data that is not a chat completion: "
            f"{self.detail(error.message)}"
        )

    def not_json(self, error: json.JSONDecodeError) -> ModelUnavailableError:
        """The server answered a body that does not parse (it is not a chat-completions API)."""
        return malformed(
            f"{self.where} answered with a body that is not JSON ({error.msg}); {_NOT_CHAT_API}"
        )

    def not_a_completion(self, body: str) -> ModelUnavailableError:
        """The server answered HTTP 200 with a page, not a chat completion (a proxy's login)."""
        start = self.detail(body)[:_PAGE_START]
        return malformed(
            f"{self.where} answered HTTP 200 with a page that is not a chat completion"
            f" (it begins {start!r}); {_NOT_CHAT_API}"
        )

    def no_choices(self) -> ModelUnavailableError:
        """The server answered HTTP 200 without any choices (it is not a chat-completions API)."""
        return malformed(
            f"{self.where} answered HTTP 200 with JSON that is not a chat completion (no choices);"
            f" {_NOT_CHAT_API}"
        )

    def no_message(self) -> ModelUnavailableError:
        """The server answered HTTP 200 with a choice that has no message."""
        return malformed(f"{self.where} answered HTTP 200 with a choice that has no message")

    def refused(self, refusal: str) -> ModelRefusedError:
        """The model declined to answer, in its own words."""
        return ModelRefusedError(f"{self.where} refused to answer: {self.detail(refusal)}")

    def detail(self, text: str) -> str:
        """The provider's text, shortened and with every configured secret blanked out."""
        for secret in self._secrets:
            text = text.replace(secret, HIDDEN)
        text = " ".join(text.split())
        return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 1] + "…"

    def _status_error(self, error: openai.APIStatusError) -> ModelError:
        status = error.status_code
        text = f"{self.where} answered HTTP {status}: {self.detail(_provider_message(error))}"
        hint = _STATUS_HINTS.get(status, _SERVER_FAILED if status >= 500 else "")
        if hint:
            text = f"{text}; {hint}"
        if isinstance(error, openai.RateLimitError | openai.InternalServerError) or status >= 500:
            return ModelUnavailableError(text)
        return ModelRefusedError(text)


def _secrets(api_key: str, base_url: str) -> tuple[str, ...]:
    """The configured values no message may show: the key, the URL's userinfo and query values.

    Longest first, so a secret that contains another is blanked out whole.
    """
    found = {api_key, *url_secrets(base_url)}
    return tuple(sorted((v for v in found if len(v) >= _SHORTEST_SECRET), key=len, reverse=True))


def _shown(url: str) -> str:
    """The URL as messages show it: no ``user:password@``, every query value hidden."""
    return shown_url(url, HIDDEN)


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
