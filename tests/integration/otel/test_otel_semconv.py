"""The exported trace follows the semantic conventions it names, attribute by attribute.

Real parts only: runs with the OpenAI-compatible provider against the conformance server (a
model over HTTP), with the built-in tools, with ``harness mcp serve-sample`` over stdio and over
Streamable HTTP, and one whose model refuses a call; then ``harness otel export --all`` as a
process, to an OTLP/HTTP receiver in a process of its own. Each span kind is checked against
the conventions of :data:`~projections.otel_data.SEMCONV_VERSION`: the required and conditionally
required attributes the log can say, and the recommended ones (the GenAI spans, the OpenAI
provider's, the MCP client span's). Content capture is off: no content anywhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from bootstrap.composition import Overrides, bootstrap
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from projections.otel_data import AGENT_NAME, SCHEMA_URL, SEMCONV_VERSION, trace_id
from tests.integration._cli import harness, store_env
from tests.integration._otlp import ReceiverProcess, Span
from tests.integration.model._conformance import (
    FINGERPRINT,
    MODEL,
    Conformance,
    Fault,
    conformance_server,
)
from tests.integration.tools._mcp import HARNESS_BIN, write_config
from tests.integration.tools.test_mcp_tools import _serve_http, _stop

QUESTION = sample_incidents()[0].question
INTERNAL, CLIENT = 1, 3
ERROR = 2
MCP_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
"""An MCP protocol version: a date (``2025-06-18``)."""
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


@dataclass
class Exported:
    """The runs, by what they exercise, and every span the receiver process took."""

    runs: dict[str, UUID]
    spans: list[Span]
    server: Conformance
    settings: Settings

    def trace(self, run: str) -> list[Span]:
        """The spans of one run's trace."""
        wanted = f"{trace_id(self.runs[run]):032x}"
        return [span for span in self.spans if span.trace_id == wanted]


def _ask(settings: Settings, session: str) -> UUID:
    with bootstrap(settings, create=True, sample=True, overrides=Overrides(heartbeat=False)) as s:
        return s.chat.ask(session, QUESTION).run_id


def _runs(base: Settings, server: Conformance, tmp_path: Path, mcp_url: str) -> dict[str, UUID]:
    """One run per kind of span to check, all in one store."""
    settings = server.settings_for(base, model_max_retries=0)
    stdio = {"transport": "stdio", "command": str(HARNESS_BIN), "args": ["mcp", "serve-sample"]}
    over_stdio = write_config(tmp_path / "stdio.toml", {"sample": stdio})
    over_http = write_config(
        tmp_path / "http.toml", {"sample": {"transport": "http", "url": mcp_url}}
    )
    runs = {"builtin": _ask(settings, "semconv-builtin")}
    runs["stdio"] = _ask(settings.model_copy(update={"tools_config": over_stdio}), "semconv-stdio")
    runs["http"] = _ask(settings.model_copy(update={"tools_config": over_http}), "semconv-http")
    server.faults.append(Fault("status", 400))  # the first call of the next run is refused
    runs["refused"] = _ask(settings, "semconv-refused")
    return runs


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    tmp_path = tmp_path_factory.mktemp("semconv")
    base = Settings(database_url=f"sqlite:///{tmp_path / 'h.db'}")
    process, mcp_url = _serve_http()
    try:
        with conformance_server() as server:
            runs = _runs(base, server, tmp_path, mcp_url)
    finally:
        _stop(process)
    with ReceiverProcess(tmp_path / "spans.jsonl") as receiver:
        env = store_env(base) | {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10"}
        done = harness("otel", "export", "--all", "--endpoint", receiver.url, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        count = int(done.stdout.split(": ")[1].split()[0])  # "exported 4 runs: N spans"
        spans = receiver.wait_for(lambda taken: len(taken) >= count)
    assert len(spans) == count
    yield Exported(runs, spans, server, base)


def _no_content(span: Span) -> None:
    assert not [key for key in CONTENT_KEYS if key in span.attributes], span.name
    assert QUESTION not in repr(span.attributes), span.name


def test_every_span_names_the_conventions_it_follows(exported: Exported) -> None:
    assert SEMCONV_VERSION == "1.41.0"
    assert {span.schema_url for span in exported.spans} == {SCHEMA_URL}
    assert SCHEMA_URL == "https://opentelemetry.io/schemas/1.41.0"
    assert {span.trace_id for span in exported.spans} == {
        f"{trace_id(run):032x}" for run in exported.runs.values()
    }
    for span in exported.spans:
        _no_content(span)  # capture is off by default


def test_the_root_is_an_internal_invoke_agent_span(exported: Exported) -> None:
    for run, session in (("builtin", "semconv-builtin"), ("http", "semconv-http")):
        (root,) = [span for span in exported.trace(run) if not span.parent]
        assert (root.name, root.kind, root.status) == (f"invoke_agent {AGENT_NAME}", INTERNAL, 1)
        attributes = root.attributes
        assert attributes["gen_ai.operation.name"] == "invoke_agent"  # required
        assert attributes["gen_ai.provider.name"] == "openai"  # required; openai-compatible
        assert attributes["gen_ai.agent.name"] == AGENT_NAME  # conditionally required ...
        assert attributes["gen_ai.agent.id"] == str(exported.runs[run])
        assert attributes["gen_ai.conversation.id"] == session
        assert attributes["gen_ai.request.model"] == MODEL
        assert "error.type" not in attributes  # it succeeded
        chats = [s for s in exported.trace(run) if s.name.startswith("chat")]
        for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):  # recommended
            assert attributes[key] == sum(chat.attributes[key] for chat in chats) > 0
        assert root.resource["service.name"] == AGENT_NAME


def _chats(exported: Exported) -> list[Span]:
    return [
        span for span in exported.spans if span.attributes.get("gen_ai.operation.name") == "chat"
    ]


def test_each_call_of_the_remote_model_is_a_client_chat_span(exported: Exported) -> None:
    port = int(exported.server.url.split(":")[2].split("/")[0])
    answered = [chat for chat in _chats(exported) if chat.status != ERROR]
    assert answered and len(_chats(exported)) == len(exported.server.requests)
    for chat in _chats(exported):
        attributes = chat.attributes
        assert (chat.name, chat.kind) == (f"chat {MODEL}", CLIENT)
        assert attributes["gen_ai.operation.name"] == "chat"  # required
        assert attributes["gen_ai.provider.name"] == "openai"  # required
        assert attributes["gen_ai.request.model"] == MODEL  # required (OpenAI)
        assert attributes["gen_ai.conversation.id"].startswith("semconv-")  # when available
        assert (attributes["server.address"], attributes["server.port"]) == ("127.0.0.1", port)
        assert attributes["openai.api.type"] == "chat_completions"  # recommended (OpenAI)
        assert isinstance(attributes["gen_ai.usage.input_tokens"], int)  # recommended
        assert isinstance(attributes["gen_ai.usage.output_tokens"], int)
    formats = sum(1 for request in exported.server.requests if "response_format" in request)
    asked_json = [chat for chat in _chats(exported) if "gen_ai.output.type" in chat.attributes]
    assert formats and len(asked_json) == formats  # conditionally required: a format was asked
    assert {chat.attributes["gen_ai.output.type"] for chat in asked_json} == {"json"}
    ids = [chat.attributes["gen_ai.response.id"] for chat in answered]  # recommended ...
    assert sorted(ids) == sorted(exported.server.answered) and len(set(ids)) == len(ids)
    for chat in answered:
        assert chat.attributes["gen_ai.response.model"] == MODEL
        assert chat.attributes["gen_ai.response.finish_reasons"] in (("stop",), ("tool_calls",))
        assert chat.attributes["gen_ai.usage.input_tokens"] == 7  # as the server counted
        assert chat.attributes["gen_ai.usage.output_tokens"] == 3
        assert chat.attributes["openai.response.system_fingerprint"] == FINGERPRINT
        assert chat.attributes["openai.response.service_tier"] == "default"  # cond. required
        assert "error.type" not in chat.attributes


def test_a_refused_model_call_has_the_http_status_as_its_error_type(exported: Exported) -> None:
    chats = [span for span in exported.trace("refused") if span.name.startswith("chat ")]
    failed = [chat for chat in chats if chat.status == ERROR]
    assert [chat.attributes["error.type"] for chat in failed] == ["400"]
    (chat,) = failed
    assert "injected 400" in chat.description  # the provider's words, as the log holds them
    assert "gen_ai.response.id" not in chat.attributes  # no response came


def _tools(spans: list[Span]) -> list[Span]:
    return [
        span for span in spans if span.attributes.get("gen_ai.operation.name") == "execute_tool"
    ]


def _model_call_ids(server: Conformance) -> set[str]:
    """The ids of the tool calls the model made, as the harness sent them back to it."""
    found: set[str] = set()
    for request in server.requests:
        for message in request.get("messages", []):
            found |= {call["id"] for call in message.get("tool_calls") or []}
    return found


def _check_tool(span: Span, server: Conformance) -> dict[str, Any]:
    """The GenAI attributes every tool span has; what is left to check by kind."""
    attributes = dict(span.attributes)
    assert attributes.pop("gen_ai.operation.name") == "execute_tool"  # required
    name = attributes.pop("gen_ai.tool.name")  # required
    assert name and name in span.name and span.status != ERROR
    assert attributes.pop("gen_ai.tool.call.id") in _model_call_ids(server)  # the model's id
    assert attributes.pop("gen_ai.agent.name") == "diagnosis-harness"  # conditionally required
    assert attributes.pop("gen_ai.conversation.id")  # the run's session: conditionally required
    UUID(attributes.pop("harness.tool.invocation.id"))  # ours, kept apart
    return attributes


def test_a_builtin_tool_is_an_internal_execute_tool_span(exported: Exported) -> None:
    tools = _tools(exported.trace("builtin"))
    assert tools
    for tool in tools:
        assert tool.name.startswith("execute_tool ") and tool.kind == INTERNAL
        rest = _check_tool(tool, exported.server)
        assert rest["gen_ai.tool.type"] == "function"  # recommended
        assert not [key for key in rest if key.startswith(("mcp.", "network.", "server."))]


def test_an_mcp_tool_over_stdio_is_a_client_tools_call_span(exported: Exported) -> None:
    tools = _tools(exported.trace("stdio"))
    assert tools
    for tool in tools:
        assert tool.name.startswith("tools/call ") and tool.kind == CLIENT
        rest = _check_tool(tool, exported.server)
        assert rest["mcp.method.name"] == "tools/call"  # required
        assert rest["network.transport"] == "pipe"  # recommended: stdio
        assert MCP_VERSION.match(rest["mcp.protocol.version"])  # recommended
        assert "server.address" not in rest and "mcp.session.id" not in rest  # a pipe: none
        assert rest["gen_ai.tool.type"] == "extension"
        assert (
            rest["harness.mcp.server"] == "sample" and rest["harness.tool.origin"] == "mcp:sample"
        )


def test_an_mcp_tool_over_http_names_its_server(exported: Exported) -> None:
    tools = _tools(exported.trace("http"))
    assert tools
    for tool in tools:
        assert tool.name.startswith("tools/call ") and tool.kind == CLIENT
        rest = _check_tool(tool, exported.server)
        assert rest["mcp.method.name"] == "tools/call"  # required
        assert rest["network.transport"] == "tcp"  # recommended: HTTP
        assert rest["network.protocol.name"] == "http"
        assert rest["server.address"] == "127.0.0.1" and rest["server.port"] > 0
        assert MCP_VERSION.match(rest["mcp.protocol.version"])
        # serve-sample speaks MCP 2026-07-28, whose Streamable HTTP gives no Mcp-Session-Id:
        # recommended "when part of a session", so none (tests/unit/test_mcp_session_seen.py
        # checks that a session id a server gives is kept)
        assert "mcp.session.id" not in rest


def test_with_capture_on_an_mcp_tool_span_carries_its_arguments_and_result(
    exported: Exported, tmp_path: Path
) -> None:
    env = store_env(exported.settings) | {
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }
    run = str(exported.runs["stdio"])
    with ReceiverProcess(tmp_path / "captured.jsonl") as receiver:
        done = harness("otel", "export", run, "--endpoint", receiver.url, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        count = int(done.stdout.split(": ")[1].split()[0])  # "exported run ID: N spans"
        spans = receiver.wait_for(lambda taken: len(taken) >= count)
    tools = _tools(spans)
    assert tools and all(tool.name.startswith("tools/call ") for tool in tools)
    for tool in tools:
        assert isinstance(json.loads(tool.attributes["gen_ai.tool.call.arguments"]), dict)
        assert "gen_ai.tool.call.result" in tool.attributes or tool.status == ERROR
    (root,) = [span for span in spans if not span.parent]
    assert QUESTION in root.attributes["gen_ai.input.messages"]
    uncaptured = {span.span_id: span for span in exported.trace("stdio")}
    for span in spans:  # content added, nothing else changed
        kept = {
            k: v
            for k, v in span.attributes.items()
            if k not in (*CONTENT_KEYS, "harness.tool.scope")
        }
        assert kept == uncaptured[span.span_id].attributes
