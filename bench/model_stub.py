"""A stub OpenAI-compatible model for the benches: a real HTTP server on 127.0.0.1, no latency.

The benches start it as a subprocess of their own (:mod:`bench.model_external`), so its CPU is
never counted as the measured process's: ``python -m bench.model_stub`` prints its base URL on
its first line, serves ``POST /v1/chat/completions`` (HTTP/1.1, connections kept alive), and
stops when its standard input closes (so it also ends with the bench that started it).

It tells the two systems apart by the model name they ask for:

* :data:`HARNESS_MODEL`: the harness's routing, agent, repair and judge calls, answered by the
  offline model's rules (:class:`~infrastructure.model_offline.OfflineProvider`, run here, in the
  stub's process): the same deterministic ReAct sequence the offline mode plays over the sample
  data, with the same tool calls, citations and verdicts, so the run publishes the same outcome;
* :data:`PEER_MODEL`: a plain ReAct conversation (LangGraph's agent). Its k-th turn gets the k-th
  tool call the harness's agent was given in the last diagnosis it drafted here, with the same
  arguments; after the last one, that diagnosis's conclusion as the answer. So both systems make
  the same tool calls and get the same final answer. Before any harness diagnosis it answers 409.

Requests are not validated beyond what answering needs: the strict conformance server of the
tests does that, and shares this module's wire conversions (:func:`to_request`,
:func:`harness_message`, :func:`completion`); this one only has to answer at once.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from application import prompts
from application.ports import Message, ModelRequest, ModelResponse, ToolCall
from domain.states import ModelStepPurpose
from infrastructure.model_offline import OfflineProvider

HARNESS_MODEL = "bench-harness"
PEER_MODEL = "bench-peer"


class Script:
    """What the peer is answered: the tool calls and conclusion of the harness's last diagnosis."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: tuple[dict[str, Any], ...] = ()
        self.answer: str | None = None

    def learn(self, body: dict[str, Any], response: ModelResponse) -> None:
        """Keep a harness agent step's calls so far and its conclusion, once it drafts one."""
        try:
            draft = json.loads(response.text)["draft"]
        except (ValueError, KeyError, TypeError):
            return  # not a drafting step (a tool call, progress only, or not JSON)
        calls = [
            call["function"]
            for message in body["messages"]
            if message["role"] == "assistant"
            for call in message.get("tool_calls") or ()
        ]
        conclusion = draft.get("conclusion") if isinstance(draft, dict) else None
        answer = conclusion.get("statement") if isinstance(conclusion, dict) else None
        with self._lock:
            self.calls = tuple(calls)
            self.answer = answer if isinstance(answer, str) else json.dumps(draft)

    def turn(self, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The peer's next assistant message (None: no diagnosis learned yet)."""
        with self._lock:
            calls, answer = self.calls, self.answer
        if answer is None:
            return None
        made = sum(message.get("role") == "tool" for message in messages)
        if made >= len(calls):
            return {"role": "assistant", "content": answer}
        call = {"id": f"call_{made}", "type": "function", "function": dict(calls[made])}
        return {"role": "assistant", "content": None, "tool_calls": [call]}


def purpose_of(messages: list[dict[str, Any]]) -> ModelStepPurpose:
    """Which harness step a conversation is, by its system prompt."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    if system == prompts.ROUTER_PROMPT:
        return ModelStepPurpose.ROUTE
    if system in (prompts.JUDGE_PROMPT, prompts.KNOWLEDGE_JUDGE_PROMPT):
        return ModelStepPurpose.JUDGE
    if system.startswith("Repair the draft"):
        return ModelStepPurpose.REPAIR
    if system.startswith(prompts.AGENT_PROMPT[:40]):
        return ModelStepPurpose.AGENT
    return ModelStepPurpose.ANSWER


def to_request(body: dict[str, Any]) -> ModelRequest:
    """The wire request as the harness's own, for the offline model."""
    messages = []
    for raw in body["messages"]:
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in raw.get("tool_calls") or ()
        )
        role = "system" if raw["role"] == "developer" else raw["role"]
        content, call_id = raw.get("content") or "", raw.get("tool_call_id")
        messages.append(Message(cast(Any, role), content, call_id, calls))
    return ModelRequest(purpose_of(body["messages"]), tuple(messages))


def harness_message(response: ModelResponse) -> dict[str, Any]:
    """The assistant message carrying the offline model's ``response``."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
            }
            for call in response.tool_calls
        ]
    return message


def completion(model: str, message: dict[str, Any], tokens: tuple[int, int]) -> dict[str, Any]:
    """A chat completion carrying ``message``, with ``tokens`` (in, out) as its usage."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    usage = {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]}
    usage["total_tokens"] = sum(tokens)
    choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [choice],
        "usage": usage,
    }


class StubServer(ThreadingHTTPServer):
    """The HTTP server, holding the offline model and the peer's script."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), StubHandler)
        self.brain = OfflineProvider()
        self.script = Script()

    def answer(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The completion for ``body``; None when the peer asks before any harness diagnosis."""
        if body.get("model") == PEER_MODEL:
            message = self.script.turn(body["messages"])
            return None if message is None else completion(PEER_MODEL, message, (1, 1))
        request = to_request(body)
        response = self.brain.complete(request)
        if request.purpose is ModelStepPurpose.AGENT:
            self.script.learn(body, response)
        usage = (response.usage.tokens_in, response.usage.tokens_out)
        return completion(str(body.get("model")), harness_message(response), usage)


class StubHandler(BaseHTTPRequestHandler):
    """One connection: answers chat completions; anything else is a 404."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, never held for an ACK

    def do_POST(self) -> None:
        """Answer a chat completion."""
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        answer = cast(StubServer, self.server).answer(json.loads(raw))
        if answer is None:
            why = "no harness diagnosis has been answered yet: the peer has no script"
            return self._send(409, {"error": {"message": why, "type": "invalid_request_error"}})
        return self._send(200, answer)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        """Keep the bench's output clean."""


def main() -> None:
    """Serve on an ephemeral port of 127.0.0.1 until standard input closes."""
    server = StubServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    sys.stdin.read()  # EOF: the bench closed our stdin, or ended
    server.shutdown()
    server.server_close()
    thread.join()


if __name__ == "__main__":
    main()
