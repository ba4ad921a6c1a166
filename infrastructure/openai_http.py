"""One chat-completions exchange over HTTP, its failures raised as the ``openai`` client's errors.

The provider posts ``{base_url}/chat/completions`` through an ``httpx`` client of its own rather
than through ``openai.OpenAI.post``: for a body that is already JSON the client's request
machinery (options copied and validated, the request and its headers rebuilt, an idempotency
key, the answer wrapped and cast) cost a third of a call's Python, about 0.3 ms a call, more than
building the request and reading the answer together. What the exchange means is kept:

* the same request: the body's bytes, ``Content-Type``/``Accept: application/json``, the key as
  a bearer token (none without a key), the base URL's query on every request, redirects
  followed (as the client's default transport does), one timeout for the whole attempt;
* the same failures: a timeout is ``openai.APITimeoutError``, a transport failure
  ``openai.APIConnectionError`` (the transport's error as its cause), an answer that is not 2xx
  the ``openai.APIStatusError`` subclass of its status with the body and the message the client
  would give (:func:`status_error`), so :mod:`infrastructure.model_retries` and
  :mod:`infrastructure.openai_errors` read them unchanged;
* the same answer: the JSON as it came, or the text when it was not sent as JSON.

The ``openai`` client stays for what is not on a run's path (``harness model check`` lists the
server's models through it).
"""

from __future__ import annotations

import json
import ssl
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit

import httpx
import openai
import orjson

if TYPE_CHECKING:
    from collections.abc import Callable

LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
"""The ``openai`` client's default connection limits."""
USER_AGENT = "diagnosis-harness (OpenAI-compatible chat completions)"

_STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    409: openai.ConflictError,
    422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
}


class ChatPoster:
    """Posts chat-completion bodies to one server; ``on_request`` runs right before each send."""

    def __init__(self, base_url: str, api_key: str, on_request: Callable[[Any], None]) -> None:
        """Post to ``{base_url}/chat/completions`` (its query kept), with ``api_key`` if any."""
        parts = urlsplit(base_url)
        self.url = urlunsplit(
            parts._replace(path=parts.path.rstrip("/") + "/chat/completions", fragment="")
        )
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.http = httpx.Client(
            event_hooks={"request": [on_request], "response": []},
            follow_redirects=True,
            limits=LIMITS,
        )
        """The HTTP client (its hooks see every exchange: the benches time the model by them)."""

    def post(self, body: bytes, timeout: float) -> object:
        """The answer to one attempt: its JSON, or its text when not sent as JSON.

        Raises the ``openai`` client's errors (see the module), and json.JSONDecodeError for a
        body sent as JSON that does not parse.
        """
        request = self.http.build_request(
            "POST", self.url, content=body, headers=self.headers, timeout=timeout
        )
        try:
            response = self.http.send(request)
        except httpx.TimeoutException as error:
            raise openai.APITimeoutError(request=cast("Any", request)) from error
        except (httpx.RequestError, ssl.SSLError) as error:
            raise openai.APIConnectionError(request=cast("Any", request)) from error
        if not response.is_success:
            raise status_error(response)
        content_type = response.headers.get("content-type", "*").split(";")[0]
        if not content_type.endswith("json"):
            return response.text
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError:  # NaN, a charset other than UTF-8: as the client read it
            return json.loads(response.text)

    def close(self) -> None:
        """Close the connections."""
        self.http.close()


def status_error(response: httpx.Response) -> openai.APIStatusError:
    """The error the ``openai`` client raises for ``response`` (a status that is not 2xx).

    Its message is ``Error code: N`` and the provider's ``error.message``, if any; its body the
    JSON's ``error`` object (else the JSON, else the text), as the client gives them.
    """
    text = response.text.strip()
    message = f"Error code: {response.status_code}"
    body: object = text
    try:
        body = json.loads(text)
    except ValueError:
        pass
    else:
        error = body.get("error", body) if isinstance(body, dict) else None
        said = error.get("message") if isinstance(error, dict) else None
        if isinstance(said, str) and said:
            message += f" - {said}"
    data = body.get("error", body) if isinstance(body, dict) else body
    status = response.status_code
    kind = _STATUS_ERRORS.get(status) or (
        openai.InternalServerError if status >= 500 else openai.APIStatusError
    )
    return kind(message, response=cast("Any", response), body=data)
