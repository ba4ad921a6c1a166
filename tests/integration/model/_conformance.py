"""A conformance server: a real HTTP server speaking OpenAI's chat-completions wire format strictly.

It validates each request as OpenAI does (the model, the messages' and tools' shapes, and a
strict ``response_format`` by :mod:`tests.strict_rules`), refusing with HTTP 400 and OpenAI's
error body ``{"error": {"message", "type", "param", "code"}}``; it answers from a *brain* (by
default the offline model, so a whole diagnosis can run through it) and injects faults queued by
the test: 429 with ``retry-after``/``retry-after-ms``, 5xx, a reset connection, a slow answer
held until the test releases it (bounded), prose where JSON was asked for, an HTML page with 200.
Modes make it non-conforming: strict schemas rejected, no tool calling, an unknown model.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from application.ports import ModelRequest, ModelResponse
from bench.model_stub import completion, harness_message, to_request
from infrastructure.model_offline import OfflineProvider
from infrastructure.settings import Settings
from tests.strict_rules import strict_problems

MODEL = "conformance-model"
FINGERPRINT = "fp_conformance"
ROLES = {"system", "developer", "user", "assistant", "tool"}
HOLD_LIMIT_S = 30.0
"""The longest a slow answer is held if the test never releases it (no test waits on this)."""


@dataclass(frozen=True)
class Fault:
    """One injected failure: ``kind`` is status, reset, slow, prose or html."""

    kind: str
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    code: str | None = None
    """The error body's ``code`` (``insufficient_quota`` for a spent quota)."""


def rate_limited(retry_after_ms: int | None = None, retry_after: str | None = None) -> Fault:
    """A 429 with the given wait headers."""
    headers = {}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
    if retry_after is not None:
        headers["retry-after"] = retry_after
    return Fault("status", 429, headers)


Brain = Callable[[ModelRequest], ModelResponse]


@dataclass
class Conformance:
    """The server's state: its URL, the queued faults, modes, and every request it received."""

    url: str = ""
    faults: deque[Fault] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    """The message of every 400/404 the server answered (what it found wrong)."""
    answered: list[str] = field(default_factory=list)
    """The id of every completion the server answered, in order."""
    release: threading.Event = field(default_factory=threading.Event)
    held: threading.Event = field(default_factory=threading.Event)
    """Set when a slow answer is being held (the test may then act, and release it)."""
    reject_strict: bool = False
    no_tools: bool = False
    model: str = MODEL
    brain: Brain = field(default_factory=lambda: OfflineProvider().complete)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_fault(self) -> Fault | None:
        """The next queued fault, taken off the queue."""
        with self.lock:
            return self.faults.popleft() if self.faults else None

    def settings_for(self, settings: Settings, **more: Any) -> Settings:
        """``settings`` with the OpenAI-compatible provider pointed at this server."""
        update = {"model": "openai", "openai_base_url": self.url, "openai_model": MODEL}
        return settings.model_copy(update={**update, "model_timeout": 10.0, **more})


def request_problems(body: Any, server: Conformance) -> tuple[int, str, str | None, str | None]:
    """``(status, message, param, code)`` of what is wrong with a request; status 0: nothing."""
    if not isinstance(body, dict):
        return 400, "We could not parse the JSON body of your request.", None, None
    if body.get("model") != server.model:
        why = f"The model `{body.get('model')}` does not exist or you do not have access to it."
        return 404, why, None, "model_not_found"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, "'messages' must be a non-empty array.", "messages", None
    for index, message in enumerate(messages):
        problem = _message_problem(message)
        if problem:
            return 400, f"Invalid 'messages[{index}]': {problem}", f"messages[{index}]", None
    if "tools" in body:
        if server.no_tools:
            return 400, "tools is not supported with this model.", "tools", None
        problem = _tools_problem(body["tools"])
        if problem:
            return 400, problem, "tools", None
    return _format_problem(body.get("response_format"), server)


def _message_problem(message: Any) -> str:
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return "a message needs a role among system, developer, user, assistant, tool."
    content = message.get("content")
    if message["role"] == "assistant" and message.get("tool_calls"):
        return "" if content is None or isinstance(content, str) else "content must be a string."
    if not isinstance(content, str):
        return "content must be a string."
    if message["role"] == "tool" and not message.get("tool_call_id"):
        return "a tool message needs tool_call_id."
    return ""


def _tools_problem(tools: Any) -> str:
    if not isinstance(tools, list):
        return "'tools' must be an array."
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict):
            return f"Invalid 'tools[{index}]': expected a function tool."
        name = function.get("name")
        if not isinstance(name, str) or not name or len(name) > 64:
            return f"Invalid 'tools[{index}].function.name'."
        if not isinstance(function.get("parameters", {}), dict):
            return f"Invalid 'tools[{index}].function.parameters': expected an object."
    return ""


def _format_problem(fmt: Any, server: Conformance) -> tuple[int, str, str | None, str | None]:
    if fmt is None:
        return 0, "", None, None
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        return 400, "Invalid 'response_format.type'.", "response_format", None
    if fmt["type"] != "json_schema":
        return 0, "", None, None
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        return 400, "Missing required parameter: 'response_format.json_schema.name'.", None, None
    if spec.get("strict") and server.reject_strict:
        return 400, "strict json_schema is not supported by this server.", "response_format", None
    if spec.get("strict"):
        problems = strict_problems(spec.get("schema"))
        if problems:
            why = f"Invalid schema for response_format '{spec['name']}': {problems[0]}"
            return 400, why, "response_format", None
    return 0, "", None, None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: Conformance


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def state(self) -> Conformance:
        return cast(_Server, self.server).state

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": self.state.model, "object": "model", "created": 1, "owned_by": "test"}
            self._json(200, {"object": "list", "data": [model]})
        else:
            self._error(404, f"Unknown path {self.path}", None, None)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json":  # a JSON body declared as something else is no request
            body = None
        with self.state.lock:
            self.state.requests.append(body if isinstance(body, dict) else {})
        status, message, param, code = request_problems(body, self.state)
        if status:
            self.state.refusals.append(message)
            return self._error(status, message, param, code)
        fault = self.state.next_fault()
        if fault is not None and self._fault(fault):
            return None
        reply = harness_message(self.state.brain(to_request(body)))
        answer = completion(self.state.model, reply, (7, 3))
        with self.state.lock:  # as OpenAI's: an id per completion, a fingerprint, a tier
            answer["id"] = f"chatcmpl-conformance-{len(self.state.answered) + 1}"
            self.state.answered.append(answer["id"])
        answer |= {"system_fingerprint": FINGERPRINT, "service_tier": "default"}
        if fault is not None and fault.kind == "prose":
            answer["choices"][0]["message"] = {"role": "assistant", "content": "Sure! It is fine."}
        return self._json(200, answer)

    def _fault(self, fault: Fault) -> bool:
        """Act out ``fault``; True when that was the whole answer."""
        if fault.kind == "status":
            self._error(fault.status, f"injected {fault.status}", None, fault.code, fault.headers)
        elif fault.kind == "reset":
            # SO_LINGER 0: closing sends a TCP reset instead of an orderly end
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
        elif fault.kind == "html":
            page = b"<html><body><h1>Sign in</h1></body></html>"
            self._send(200, page, "text/html")
        elif fault.kind == "slow":
            self.state.held.set()
            self.state.release.wait(HOLD_LIMIT_S)
            return False  # then answers, late
        return fault.kind != "prose"

    def _error(
        self,
        status: int,
        message: str,
        param: str | None,
        code: str | None,
        headers: dict[str, str] | None = None,
    ) -> None:
        kind = "invalid_request_error" if status < 500 else "server_error"
        body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
        self._send(status, json.dumps(body).encode(), "application/json", headers)

    def _json(self, status: int, body: dict[str, Any]) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _send(
        self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Keep test output quiet."""


@contextmanager
def conformance_server() -> Iterator[Conformance]:
    """A running conformance server on an ephemeral port of 127.0.0.1, stopped afterwards."""
    state = Conformance()
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.state = state
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
