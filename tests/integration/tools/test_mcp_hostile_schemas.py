"""A hostile MCP server attacks the client: schemas that would fetch, bad names, floods.

Real server processes over real stdio. A schema with a remote or ``file://`` reference, or one
too deep or too large, is refused at admission with a reason; nothing is fetched (a port that
accepts and never answers sees no connection) and the file's content appears nowhere: not in the
log, not in the tools' views, not in what the model is sent. Bad names are refused and shown
escaped and cut. A listing or an answer over ``max_message_bytes`` is not read: the server does
not start, or the call fails with SIZE naming the limit, and the run finishes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.schemas_ops import ToolPublic
from application.ports import ModelRequest, ModelResponse
from application.tool_admission import SHOWN_NAME_CHARS, Refusal
from bootstrap.composition import Services
from domain.run import Run
from domain.tool_invocation import ToolInvocation
from infrastructure.model_scripted import ScriptedProvider
from infrastructure.settings import ConfigurationError
from infrastructure.tool_catalog import summary_lines
from infrastructure.tool_config import DEFAULT_MAX_MESSAGE_BYTES
from tests.helpers import ask_scripted, fresh_sqlite
from tests.integration._cli import harness
from tests.integration.tools._mcp import (
    HOSTILE,
    calls,
    configured,
    hostile,
    one_call,
    starts,
    write_config,
)

ARGS = {"service": "checkout"}
SECRET = "sk-hostile-7f3a9c2e51d84b6f-DO-NOT-LEAK"
REFUSED_FOR_SCHEMA = {
    "remote_ref": "a $ref outside itself ('http://127.0.0.1:",
    "file_ref": "a $ref outside itself ('file://",
    "id_trick": "a $ref outside itself ('x.json')",
    "deep": "nested more than 32 deep",
    "big_schema": "bytes of JSON; the most admitted is 65536",
    "loops": "refers to itself without end",
}


@pytest.fixture
def services() -> Iterator[Services]:
    with fresh_sqlite() as opened:
        yield opened


@pytest.fixture
def silent_port() -> Iterator[socket.socket]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        yield listener


def _schemas_config(tmp_path: Path, port: socket.socket) -> Path:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"type": "string", "description": SECRET}))
    server = hostile(tmp_path, "schemas")
    server["env"] |= {
        "HOSTILE_PORT": str(port.getsockname()[1]),
        "HOSTILE_SECRET_FILE": str(secret),
    }
    return write_config(tmp_path / "tools.toml", {"evil": server})


class Recording:
    """The scripted model, keeping every request it is sent."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner, self.name, self.blocking = inner, inner.name, inner.blocking
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.inner.complete(request)


def _stored(services: Services) -> str:
    rows = services.store.recorder.select_notifications(start=1, limit=10_000)
    return "\n".join(bytes(row.state).decode("utf-8", "replace") for row in rows)


def _events(services: Services, cls: type[Any]) -> list[Any]:
    rows = services.store.recorder.select_notifications(start=1, limit=10_000)
    found = [services.store.mapper.to_domain_event(row) for row in rows]
    return [event for event in found if isinstance(event, cls)]


def test_schemas_that_would_fetch_or_swell_are_refused_and_nothing_is_fetched(
    services: Services, tmp_path: Path, silent_port: socket.socket
) -> None:
    recorded: list[Recording] = []

    def wrap(provider: ScriptedProvider) -> Recording:
        recorded.append(Recording(provider))
        return recorded[-1]

    with configured(services, _schemas_config(tmp_path, silent_port)) as sources:
        views = {view.name: view for view in sources.views()}
        assert list(sources.tools) == ["fine"]  # the only tool runs may ask for
        for name in [*REFUSED_FOR_SCHEMA, "fine"]:
            ask_scripted(services, one_call(name, ARGS), tools=sources.tools, wrap=wrap)
        public = [ToolPublic.of(view).model_dump_json() for view in sources.views()]
        summary = summary_lines(sources.views(), sources.logs)
    for name, reason in REFUSED_FOR_SCHEMA.items():
        admission = views[name].admission
        assert (admission.refusal, admission.remedy) == (Refusal.SCHEMA, ""), name
        assert reason in admission.why and views[name].input_schema == {}
    assert views["fine"].admission.admitted
    with pytest.raises(BlockingIOError):
        silent_port.accept()  # nobody connected: nothing was fetched
    rejected = _events(services, Run.ToolRequestRejected)
    assert [r.tool for r in rejected] == list(REFUSED_FOR_SCHEMA)  # unknown tools, never run
    assert calls(tmp_path) == ["1 fine"]
    sent = " ".join(repr(request) for rec in recorded for request in rec.requests)
    for seen in (_stored(services), " ".join(public), " ".join(summary), sent):
        assert SECRET not in seen
    assert "remote_ref" not in {
        spec.name for rec in recorded for r in rec.requests for spec in r.tools
    }


def test_bad_names_are_refused_and_every_view_shows_them_on_one_short_line(
    services: Services, tmp_path: Path, silent_port: socket.socket
) -> None:
    with configured(services, _schemas_config(tmp_path, silent_port)) as sources:
        views = sources.views()
        (summary,) = summary_lines(views, sources.logs)
    invalid = [view for view in views if view.admission.refusal is Refusal.INVALID_NAME]
    assert [view.name for view in invalid] == [
        "'bad\\nname'",
        "'<b>markup</b>'",
        "'" + "n" * (SHOWN_NAME_CHARS - 2) + "…",
    ]
    assert "\n" not in summary and "'bad\\nname': invalid name" in summary
    assert len(summary) < 2000


def test_harness_tools_list_shows_refusals_without_the_file_or_a_split_line(
    tmp_path: Path, silent_port: socket.socket
) -> None:
    env = {
        "HARNESS_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}",
        "HARNESS_TOOLS_CONFIG": str(_schemas_config(tmp_path, silent_port)),
    }
    listed = harness("tools", "list", "--json", env=env, cwd=tmp_path)
    table = harness("tools", "list", env=env, cwd=tmp_path)
    assert listed.returncode == table.returncode == 0, listed.stderr + table.stderr
    for done in (listed, table):
        assert SECRET not in done.stdout + done.stderr and "Traceback" not in done.stderr
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["data"]}
    assert tools["file_ref"]["refusal"] == "bad schema"
    assert tools["file_ref"]["input_schema"] == {}
    assert tools["'<b>markup</b>'"]["refusal"] == "invalid name"
    assert all(len(name) <= SHOWN_NAME_CHARS and "\n" not in name for name in tools)
    rows = [line for line in table.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == len(tools) == 10  # one line per tool: no name splits one
    (bad,) = [row for row in rows if "'bad\\nname'" in row]
    assert "refused (invalid name)" in bad
    assert any("'<b>markup</b>'" in row for row in rows)  # text, not markup
    assert not any("n" * SHOWN_NAME_CHARS in row for row in rows)
    (file_ref,) = [row for row in rows if row.startswith("│ file_ref ")]
    assert "refused (bad schema)" in file_ref and "a $ref outside itself" in file_ref
    with pytest.raises(BlockingIOError):
        silent_port.accept()


def test_a_listing_over_the_message_limit_stops_the_start_with_its_reason(
    services: Services, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "tools.toml", {"huge": hostile(tmp_path, "huge_listing")})
    with pytest.raises(ConfigurationError) as refused:
        with configured(services, config):
            pass
    assert str(refused.value) == (
        f"servers.huge: MCP server 'huge': the server's answer was over"
        f" {DEFAULT_MAX_MESSAGE_BYTES} bytes (max_message_bytes); not read"
    )


def test_a_100_mb_answer_is_not_read_and_fails_the_call_with_size(
    services: Services, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "tools.toml", {"f": hostile(tmp_path, "flood")})
    with configured(services, config) as sources:
        first = ask_scripted(services, one_call("flood", ARGS), tools=sources.tools)
        ask_scripted(services, one_call("fine", ARGS), tools=sources.tools)
    assert first.termination is not None  # the run finished
    (failed,) = _events(services, ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "SIZE"
    assert failed.message == (
        f"MCP server 'f': the server's answer was over {DEFAULT_MAX_MESSAGE_BYTES} bytes"
        " (max_message_bytes); not read"
    )
    (ready,) = _events(services, ToolInvocation.ToolInvocationReady)
    assert ready.content.endswith("answered by start 1")  # the session stayed in step
    assert starts(tmp_path) == 1
    assert max(len(row) for row in _stored(services).splitlines()) < 20_000


def test_an_oversized_message_naming_no_request_ends_the_call_at_its_timeout(
    services: Services, tmp_path: Path
) -> None:
    server = hostile(tmp_path, "flood", call_timeout=1.5, max_message_bytes=1 << 20)
    config = write_config(tmp_path / "tools.toml", {"f": server})
    with configured(services, config) as sources:
        ask_scripted(services, one_call("flood_anon", ARGS, deadline_s=20), tools=sources.tools)
    (failed,) = _events(services, ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "TIMEOUT" and "did not answer within 1.5 s" in failed.message


def test_v1_tools_shows_the_refusals_without_the_file_or_a_raw_name(
    tmp_path: Path, silent_port: socket.socket
) -> None:
    from infrastructure.settings import Settings
    from tests.api._serve import served_client

    config = _schemas_config(tmp_path, silent_port)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 's.db'}", tools_config=config)
    with served_client(settings) as served:
        response = served.client.get("/v1/tools")
    assert response.status_code == 200 and SECRET not in response.text
    shown = {tool["name"]: tool["refusal"] for tool in response.json()["data"]}
    assert shown["remote_ref"] == shown["file_ref"] == shown["deep"] == "bad schema"
    assert shown["'bad\\nname'"] == "invalid name" and "bad\nname" not in shown
    with pytest.raises(BlockingIOError):
        silent_port.accept()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The hostile server in ``big`` mode over Streamable HTTP (JSON answers); its URL."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        env = {**os.environ, "HOSTILE_HTTP_FD": str(listener.fileno())}
        env |= hostile(tmp_path, "big")["env"]
        command = [sys.executable, str(HOSTILE), "big"]
        with subprocess.Popen(command, env=env, pass_fds=[listener.fileno()]) as process:
            try:
                yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
            finally:
                process.terminate()
                process.wait(30)


def test_an_http_answer_over_the_limit_is_not_read_and_fails_the_call_with_size(
    services: Services, tmp_path: Path, http_server: str
) -> None:
    server = {"transport": "http", "url": http_server, "max_message_bytes": 1 << 20}
    config = write_config(tmp_path / "tools.toml", {"web": server})
    with configured(services, config) as sources:
        ask_scripted(services, one_call("big", ARGS), tools=sources.tools)
        ask_scripted(services, one_call("refuses", ARGS), tools=sources.tools)
    failed = _events(services, ToolInvocation.ToolInvocationFailed)
    assert [(f.error_code, f.message[:60]) for f in failed] == [
        ("SIZE", "MCP server 'web': the server's answer was over 1048576 bytes"),
        ("EXECUTION", "refuses failed: permission denied for checkout zzzzzzzzzzzzz"),
    ]  # the session was still sound for the next call
    assert [f.error_type for f in failed] == ["", "tool_error"]  # isError: true, for the trace
