"""The OpenAI-compatible provider against a real local HTTP server speaking chat completions."""

from __future__ import annotations

import json
import socket
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
from pydantic import SecretStr

from application.ports import (
    Message,
    ModelError,
    ModelRefusedError,
    ModelRequest,
    ModelTimeoutError,
    ModelUnavailableError,
    ToolCall,
    ToolSpec,
)
from domain.states import ModelStepPurpose
from infrastructure.model_openai import OpenAICompatibleProvider
from infrastructure.settings import Settings

API_KEY = "sk-test-ZQX7-never-print-me-4d1f"
MODEL = "test-model"


@dataclass(frozen=True)
class Received:
    """One request the server got."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """What the server answers; ``block`` holds the answer until the test ends."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    block: bool = False
    location: str | None = None


def completion(message: dict[str, Any], **extra: Any) -> Reply:
    """A 200 chat completion with one choice."""
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
    choice.update(extra.pop("choice", {}))
    body = {"id": "c1", "object": "chat.completion", "created": 1, "model": MODEL}
    body.update(choices=[choice], **extra)
    return Reply(body=json.dumps(body).encode())


def error_reply(status: int, message: str) -> Reply:
    """An OpenAI-style error body."""
    body = {"error": {"message": message, "type": "test_error", "code": None}}
    return Reply(status=status, body=json.dumps(body).encode())


@dataclass
class ChatServer:
    """Per-test behaviour and the record of what arrived."""

    url: str = ""
    requests: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    reply: Callable[[Received], Reply] = lambda _: completion({"content": ""})


class _Server(ThreadingHTTPServer):
    chat: ChatServer


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        chat = cast(_Server, self.server).chat
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        received = Received(
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=json.loads(raw),
        )
        chat.requests.append(received)
        reply = chat.reply(received)
        if reply.block:
            chat.release.wait(timeout=60)  # set by the fixture's teardown; the bound avoids hangs
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        if reply.location is not None:
            self.send_header("Location", reply.location)
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Keep test output quiet."""


@pytest.fixture
def server() -> Iterator[ChatServer]:
    chat = ChatServer()
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.chat = chat
    chat.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield chat
    chat.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def provider(server: ChatServer) -> Iterator[OpenAICompatibleProvider]:
    with OpenAICompatibleProvider(
        base_url=server.url, api_key=API_KEY, model=MODEL, timeout_s=10.0
    ) as value:
        yield value


def ask(*messages: Message, **fields: Any) -> ModelRequest:
    if not messages:
        messages = (Message(role="user", content="why is checkout slow?"),)
    return ModelRequest(purpose=ModelStepPurpose.ANSWER, messages=messages, **fields)


# -- answers ----------------------------------------------------------------------------------


def test_text_answer_maps_text_usage_and_finish_reason(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    server.reply = lambda _: completion(
        {"content": "the database is saturated"},
        usage={"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    )

    response = provider.complete(ask())

    assert response.text == "the database is saturated"
    assert response.tool_calls == ()
    assert (response.usage.tokens_in, response.usage.tokens_out) == (12, 5)
    assert response.finish_reason == "stop"
    [received] = server.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == f"Bearer {API_KEY}"
    assert received.body["model"] == MODEL
    assert received.body["messages"] == [{"role": "user", "content": "why is checkout slow?"}]
    assert "tools" not in received.body
    assert "response_format" not in received.body


def test_missing_usage_and_content_count_as_zero_and_empty(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    server.reply = lambda _: completion({"content": None}, choice={"finish_reason": "length"})

    response = provider.complete(ask())

    assert response.text == ""
    assert (response.usage.tokens_in, response.usage.tokens_out) == (0, 0)
    assert response.finish_reason == "length"


def test_tool_calls_are_parsed_and_bad_arguments_kept_as_text(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    def call(call_id: str, arguments: str) -> dict[str, Any]:
        function = {"name": "query_logs", "arguments": arguments}
        return {"id": call_id, "type": "function", "function": function}

    server.reply = lambda _: completion(
        {
            "content": None,
            "tool_calls": [
                call("c1", '{"service": "checkout", "minutes": 15}'),
                call("c2", '{"service": "checkout", '),
                call("c3", "[1, 2]"),
            ],
        },
        choice={"finish_reason": "tool_calls"},
    )

    response = provider.complete(ask())

    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (
        ToolCall(id="c1", name="query_logs", arguments={"service": "checkout", "minutes": 15}),
        ToolCall(id="c2", name="query_logs", raw_arguments='{"service": "checkout", '),
        ToolCall(id="c3", name="query_logs", raw_arguments="[1, 2]"),
    )


def test_tools_and_json_schema_are_sent_in_the_wire_format(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    parameters = {"type": "object", "properties": {"service": {"type": "string"}}}
    server.reply = lambda _: completion({"content": '{"answer": "disk full"}'})

    response = provider.complete(
        ask(
            tools=(ToolSpec(name="query_logs", description="Read logs.", parameters=parameters),),
            json_schema=schema,
        )
    )

    assert json.loads(response.text) == {"answer": "disk full"}
    [received] = server.requests
    assert received.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "query_logs",
                "description": "Read logs.",
                "parameters": parameters,
            },
        }
    ]
    assert received.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


def test_conversation_roles_map_to_chat_messages(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    calls = (
        ToolCall(id="c1", name="query_logs", arguments={"service": "checkout"}),
        ToolCall(id="c2", name="query_logs", raw_arguments="{oops"),
    )

    provider.complete(
        ask(
            Message(role="system", content="You diagnose."),
            Message(role="user", content="why?"),
            Message(role="assistant", content="", tool_calls=calls),
            Message(role="tool", content="3 errors", tool_call_id="c1"),
            Message(role="tool", content="INVALID_REQUEST", tool_call_id="c2"),
        )
    )

    [received] = server.requests
    assert received.body["messages"] == [
        {"role": "system", "content": "You diagnose."},
        {"role": "user", "content": "why?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "query_logs", "arguments": '{"service": "checkout"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "query_logs", "arguments": "{oops"},
                },
            ],
        },
        {"role": "tool", "content": "3 errors", "tool_call_id": "c1"},
        {"role": "tool", "content": "INVALID_REQUEST", "tool_call_id": "c2"},
    ]


def test_tool_message_without_call_id_is_refused_before_sending(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    with pytest.raises(ModelRefusedError, match="tool_call_id"):
        provider.complete(ask(Message(role="tool", content="orphan")))

    assert server.requests == []


def test_model_refusal_raises_refused(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    server.reply = lambda _: completion({"content": None, "refusal": "I cannot help with that."})

    with pytest.raises(ModelRefusedError, match="I cannot help with that"):
        provider.complete(ask())


# -- configuration ----------------------------------------------------------------------------


def test_from_settings_uses_the_configured_server_model_and_key(server: ChatServer) -> None:
    settings = Settings(
        openai_base_url=server.url,
        openai_api_key=SecretStr(API_KEY),
        openai_model="configured-model",
        model_timeout=7.0,
    )
    server.reply = lambda _: completion({"content": "ok"})

    with OpenAICompatibleProvider.from_settings(settings) as provider:
        response = provider.complete(ask())

    assert provider.name == "openai-compatible"
    assert provider.timeout_s == 7.0
    assert response.text == "ok"
    [received] = server.requests
    assert received.body["model"] == "configured-model"
    assert received.headers["authorization"] == f"Bearer {API_KEY}"


def test_empty_key_sends_no_authorization_header(server: ChatServer) -> None:
    server.reply = lambda _: completion({"content": "ok"})

    with OpenAICompatibleProvider(
        base_url=server.url, api_key="", model=MODEL, timeout_s=10.0
    ) as provider:
        provider.complete(ask())

    [received] = server.requests
    assert "authorization" not in received.headers


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, ModelRefusedError),
        (401, ModelRefusedError),
        (403, ModelRefusedError),
        (404, ModelRefusedError),
        (422, ModelRefusedError),
        (429, ModelUnavailableError),
        (500, ModelUnavailableError),
        (503, ModelUnavailableError),
    ],
)
def test_http_errors_map_to_model_errors(
    server: ChatServer,
    provider: OpenAICompatibleProvider,
    status: int,
    error_class: type[ModelError],
) -> None:
    server.reply = lambda _: error_reply(status, f"provider says no ({status})")

    with pytest.raises(error_class) as caught:
        provider.complete(ask())

    assert f"HTTP {status}" in str(caught.value)
    assert f"provider says no ({status})" in str(caught.value)
    assert len(server.requests) == 1, "the client must not retry: the harness owns retries"


def test_plain_text_error_body_is_quoted(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    server.reply = lambda _: Reply(status=502, body=b"Bad gateway", content_type="text/plain")

    with pytest.raises(ModelUnavailableError, match="HTTP 502: Bad gateway"):
        provider.complete(ask())


@pytest.mark.parametrize("status", [400, 401, 403, 429, 500])
def test_api_key_never_appears_in_errors(
    server: ChatServer, provider: OpenAICompatibleProvider, status: int
) -> None:
    # A careless server echoes the credentials it received.
    server.reply = lambda received: error_reply(
        status, f"Incorrect API key provided: {received.headers['authorization']}"
    )

    with pytest.raises(ModelError) as caught:
        provider.complete(ask())

    assert "Incorrect API key provided" in str(caught.value)
    assert API_KEY not in str(caught.value)
    assert API_KEY not in repr(caught.value)
    assert API_KEY not in "".join(traceback.format_exception(caught.value))


def test_slow_answer_times_out(server: ChatServer, provider: OpenAICompatibleProvider) -> None:
    server.reply = lambda _: Reply(block=True)

    # The request's shorter timeout wins over the provider's 10 s.
    with pytest.raises(ModelTimeoutError, match="within 0.5 s") as caught:
        provider.complete(ask(timeout_s=0.5))

    assert API_KEY not in str(caught.value)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b'{"id": "c1", "choices": [{"message": '),
        Reply(body=b'{"id": "c1", "object": "chat.completion", "choices": []}'),
        Reply(body=b"{}"),
        Reply(body=b"[1, 2]"),
        Reply(body=b'{"choices": [{"index": 0, "finish_reason": "stop"}]}'),
        Reply(body=b"<html>login</html>", content_type="text/html"),
    ],
    ids=["invalid-json", "no-choices", "empty-object", "json-array", "no-message", "html"],
)
def test_malformed_success_body_is_unavailable(
    server: ChatServer, provider: OpenAICompatibleProvider, reply: Reply
) -> None:
    server.reply = lambda _: reply

    with pytest.raises(ModelUnavailableError, match=r"answered (with|HTTP 200)"):
        provider.complete(ask())


def test_unreachable_server_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below, so connections are refused

    with (
        OpenAICompatibleProvider(
            base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, model=MODEL, timeout_s=5.0
        ) as provider,
        pytest.raises(ModelUnavailableError, match="could not be reached") as caught,
    ):
        provider.complete(ask())

    assert API_KEY not in str(caught.value)


# -- the exchange, as the openai client made it ---------------------------------------------


def test_json_that_is_not_strict_json_reads_as_the_client_read_it(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    """NaN (which the standard parser takes) and a declared charset other than UTF-8."""
    nan = b'{"choices": [{"message": {"role": "assistant", "content": "ok"}}], "x": NaN}'
    latin = json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": "café"}}]}, ensure_ascii=False
    ).encode("latin-1")
    replies = iter(
        [Reply(body=nan), Reply(body=latin, content_type="application/json; charset=latin-1")]
    )
    server.reply = lambda _: next(replies)

    assert provider.complete(ask()).text == "ok"
    assert provider.complete(ask()).text == "café"


def test_a_redirect_is_followed_with_the_body(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    replies = iter(
        [Reply(status=307, location="/v2/chat/completions"), completion({"content": "moved"})]
    )
    server.reply = lambda _: next(replies)

    assert provider.complete(ask()).text == "moved"
    first, second = server.requests
    assert (first.path, second.path) == ("/v1/chat/completions", "/v2/chat/completions")
    assert second.body == first.body
    assert second.headers["authorization"] == f"Bearer {API_KEY}"  # the same origin


def test_a_status_that_is_neither_success_nor_redirect_is_refused(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    server.reply = lambda _: Reply(status=304)

    with pytest.raises(ModelRefusedError, match="answered HTTP 304"):
        provider.complete(ask())
    assert len(server.requests) == 1


def test_every_request_says_what_it_sends_and_accepts(
    server: ChatServer, provider: OpenAICompatibleProvider
) -> None:
    server.reply = lambda _: completion({"content": "hi"})

    provider.complete(ask())

    (received,) = server.requests
    assert received.headers["content-type"] == "application/json"
    assert received.headers["accept"] == "application/json"
    assert received.body["model"] == MODEL
