"""A failed chat-completions exchange raises what the ``openai`` client raises for it."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from infrastructure.openai_http import ChatPoster, status_error

URL = "http://127.0.0.1:9/v1/chat/completions"


def _answer(status: int, body: bytes, content_type: str = "application/json") -> httpx.Response:
    request = httpx.Request("POST", URL)
    return httpx.Response(
        status, content=body, headers={"content-type": content_type}, request=request
    )


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (409, openai.ConflictError),
        (422, openai.UnprocessableEntityError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
        (418, openai.APIStatusError),
        (302, openai.APIStatusError),
    ],
)
def test_each_status_is_the_clients_error_class(status: int, kind: type[Exception]) -> None:
    body = {"error": {"message": "no", "type": "t", "code": "c"}}

    error = status_error(_answer(status, json.dumps(body).encode()))

    assert type(error) is kind
    assert error.status_code == status
    assert error.message == f"Error code: {status} - no"
    assert error.body == body["error"]
    assert error.code == "c"


@pytest.mark.parametrize(
    ("raw", "message", "body"),
    [
        (b"Bad gateway", "Error code: 502", "Bad gateway"),
        (b"", "Error code: 502", ""),
        (b'{"message": "flat"}', "Error code: 502 - flat", {"message": "flat"}),
        (b'{"error": "text"}', "Error code: 502", "text"),
        (b"[1]", "Error code: 502", [1]),
    ],
)
def test_the_body_and_message_are_the_clients(raw: bytes, message: str, body: object) -> None:
    error = status_error(_answer(502, raw, "text/plain"))

    assert (error.message, error.body) == (message, body)


def test_the_retry_headers_stay_readable() -> None:
    answer = httpx.Response(
        429, headers={"retry-after-ms": "250"}, request=httpx.Request("POST", URL)
    )

    assert status_error(answer).response.headers["retry-after-ms"] == "250"


def test_the_url_keeps_the_base_urls_path_and_query_and_the_key_is_a_bearer_token() -> None:
    poster = ChatPoster("http://h:1/v1/?api-version=2024-10#frag", "k3y", lambda _r: None)
    keyless = ChatPoster("http://h:1/openai", "", lambda _r: None)
    try:
        assert poster.url == "http://h:1/v1/chat/completions?api-version=2024-10"
        assert poster.headers["Authorization"] == "Bearer k3y"
        assert keyless.url == "http://h:1/openai/chat/completions"
        assert "Authorization" not in keyless.headers
    finally:
        poster.close()
        keyless.close()
