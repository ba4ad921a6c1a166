"""A secret an MCP server echoes is stored nowhere and printed nowhere; how many is recorded.

The echo server (tests/mcp_servers/echo_secrets.py) is handed a key and a bearer token with
``env_from`` and puts them in a tool's description, its records, a failed result, a protocol
error, structured content and its stderr. A diagnosis through the real service calls each tool
and cites a redacted record; then the SQLite file's bytes, the stderr log, the trace and
explain APIs, the tools API, ``harness runs show / explain / list``, ``harness audit export``
and the OTLP spans ``harness otel export`` sends are searched for either value.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from domain.redactor import MARK
from domain.tool_invocation import ToolInvocation
from infrastructure.mcp_client import McpConnection, McpServerError
from infrastructure.settings import Settings
from infrastructure.tool_config import StdioServer
from tests.api._serve import read_all, served_client
from tests.integration._cli import harness, store_env
from tests.integration._otlp import Receiver

ECHO = Path(__file__).resolve().parents[2] / "mcp_servers" / "echo_secrets.py"
SECRET = "ek-9f3Kq7Lm2Xv8-never-store-me"
TOKEN = "tk-Zr81Qw5Yt3-never-store-me"
INVENTED = "eyJhbGciOiJIUzI1NiJ9.invented-by-the-server"
NEVER = (SECRET, TOKEN, INVENTED, "Pa55-w0rd-x", "hunter2")
CITED = f"upstream timeout after 30s calling pricing-service with key {MARK}"


def _scenario() -> dict[str, Any]:
    gained = {"gain": "GAINED", "facts": []}
    nothing = {"gain": "NO_GAIN", "facts": []}
    citation = {"reference": "$1", "excerpt": CITED}
    statement = "Checkout timed out calling pricing-service."
    return {
        "route": "DIAGNOSIS",
        "steps": [
            {"tool": "echo", "arguments": {"service": "checkout"}},
            {"progress": gained, "tool": "fail", "arguments": {"service": "checkout"}},
            {"progress": nothing, "tool": "protocol_error", "arguments": {"service": "checkout"}},
            {"progress": nothing, "tool": "structured", "arguments": {"service": "checkout"}},
            {
                "progress": gained,
                "draft": {
                    "conclusion": {"statement": statement, "citations": [citation]},
                    "facts": [{"statement": statement, "citations": [citation]}],
                    "missing_info": [],
                },
            },
        ],
        "judge": "SUPPORTED",
    }


def _tools_config(tmp_path: Path) -> Path:
    path = tmp_path / "tools.toml"
    path.write_text(
        f"""builtin = "none"
log_dir = {json.dumps(str(tmp_path / "logs"))}
[servers.echo]
transport = "stdio"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(ECHO))}]
env_from = {{ ECHO_SECRET = "ECHO_TEST_SECRET", ECHO_TOKEN = "ECHO_TEST_TOKEN" }}
"""
    )
    return path


@dataclass
class Diagnosed:
    """A diagnosis run over the echo server, and where everything it left can be read."""

    settings: Settings
    run_id: str
    feed: list[Any]
    events: list[Any]
    served: dict[str, str]
    """What the HTTP API answered, by route."""
    tmp_path: Path


@pytest.fixture
def diagnosed(
    sqlite_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Diagnosed]:
    monkeypatch.setenv("ECHO_TEST_SECRET", SECRET)
    monkeypatch.setenv("ECHO_TEST_TOKEN", TOKEN)
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps(_scenario()))
    settings = sqlite_settings.model_copy(
        update={"model": f"scripted:{scenario}", "tools_config": _tools_config(tmp_path)}
    )
    with served_client(settings, sample=False) as running:
        client = running.client
        feed = read_all(client, "POST", "/v1/chat", json={"query": "why is checkout slow?"})
        run_id = feed[0].data["run_id"]
        served = {
            route: client.get(route).text
            for route in (
                f"/v1/runs/{run_id}",
                f"/v1/runs/{run_id}/trace",
                f"/v1/runs/{run_id}/explain",
                "/v1/tools",
            )
        }
        store = running.store
        events = [
            store.mapper.to_domain_event(n)
            for n in store.recorder.select_notifications(start=1, limit=10_000)
        ]
    yield Diagnosed(settings, run_id, feed, events, served, tmp_path)


def _assert_absent(where: str, text: str | bytes) -> None:
    for secret in NEVER:
        found = secret.encode() in text if isinstance(text, bytes) else secret in text
        assert not found, f"{secret!r} is in {where}"


def test_the_secrets_are_redacted_and_counted_and_the_redacted_record_is_cited(
    diagnosed: Diagnosed,
) -> None:
    invocations = [e for e in diagnosed.events if isinstance(e, ToolInvocation.ToolInvocationReady)]
    failures = [e for e in diagnosed.events if isinstance(e, ToolInvocation.ToolInvocationFailed)]
    echo, structured = invocations
    # key twice, the token, the invented bearer token, the URL's user:password
    assert echo.redactions == 5 and echo.content.count(MARK) == 5
    assert CITED in echo.content and f"Authorization: Bearer {MARK}" in echo.content
    assert structured.redactions == 3  # the key in a row, the password and token fields
    assert [(f.error_code, f.redactions) for f in failures] == [("EXECUTION", 2), ("EXECUTION", 1)]
    assert f"permission denied for key {MARK}" in failures[0].message
    assert diagnosed.feed[-1].data["release_outcome"] == "SUCCESS"  # the citation matched
    for event in diagnosed.events:
        _assert_absent(type(event).__name__, repr(event.__dict__))


def test_no_echoed_secret_is_in_the_database_logs_or_the_apis(diagnosed: Diagnosed) -> None:
    database = Path(diagnosed.settings.database_url.removeprefix("sqlite:///"))
    files = [p for p in database.parent.glob(f"{database.name}*") if p.is_file()]
    assert database in files
    for path in files:
        _assert_absent(path.name, path.read_bytes())
    log = diagnosed.tmp_path / "logs" / "mcp-echo.log"
    assert "echo_secrets: starting with" in log.read_text()  # the server did write its stderr
    _assert_absent(log.name, log.read_bytes())
    for route, body in diagnosed.served.items():
        _assert_absent(route, body)
    assert CITED in diagnosed.served[f"/v1/runs/{diagnosed.run_id}"]  # what it published
    assert "this server holds [redacted]" in diagnosed.served["/v1/tools"]
    assert "holds a secret the harness handed its server" in diagnosed.served["/v1/tools"]


def test_no_echoed_secret_is_printed_by_the_cli_or_exported(diagnosed: Diagnosed) -> None:
    env = store_env(diagnosed.settings) | {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "5"}
    cwd, run_id = diagnosed.tmp_path, diagnosed.run_id
    explained = ""
    for command in (
        ["runs", "show", run_id],
        ["runs", "explain", run_id],
        ["runs", "list"],
        ["audit", "export", run_id],
    ):
        done = harness(*command, env=env, cwd=cwd)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip(), command
        _assert_absent(" ".join(command), done.stdout + done.stderr)
        explained = done.stdout if command[1] == "explain" else explained
    assert f"permission denied for key {MARK} (Authorization: Bearer {MARK})" in explained
    exported = harness("audit", "export", run_id, env=env, cwd=cwd).stdout
    assert '"redactions": 5' in exported or '"redactions":5' in exported
    with Receiver() as receiver:
        sent = harness("otel", "export", run_id, "--endpoint", receiver.url, env=env, cwd=cwd)
    assert sent.returncode == 0, sent.stderr
    tools = [s for s in receiver.spans if s.name.startswith("tools/call ")]  # MCP client spans
    assert [s.attributes.get("harness.tool.redactions") for s in tools] == [5, 2, 1, 3]
    for span in receiver.spans:
        _assert_absent(f"span {span.name}", span.raw)


def test_harness_ask_prints_no_echoed_secret(diagnosed: Diagnosed) -> None:
    """The CLI composes its own service: the same secrets are known there."""
    settings = diagnosed.settings
    env = store_env(settings) | {
        "HARNESS_MODEL": settings.model,
        "HARNESS_TOOLS_CONFIG": str(settings.tools_config),
        "ECHO_TEST_SECRET": SECRET,
        "ECHO_TEST_TOKEN": TOKEN,
    }
    asked = harness("ask", "why is checkout slow?", env=env, cwd=diagnosed.tmp_path)
    assert asked.returncode == 0, asked.stderr
    assert "Checkout timed out calling pricing-service." in asked.stdout
    assert "bytes, 5 secrets redacted" in asked.stdout  # the echo's result, as the log says
    _assert_absent("harness ask", asked.stdout + asked.stderr)


def test_a_server_that_fails_to_start_quoting_its_secret_is_named_without_it() -> None:
    config = StdioServer(
        transport="stdio",
        command=sys.executable,
        args=[str(ECHO)],
        env={"ECHO_REFUSE_LISTING": "1"},
        env_from={"ECHO_SECRET": "ECHO_TEST_SECRET", "ECHO_TOKEN": "ECHO_TEST_TOKEN"},
    )
    environ = {**os.environ, "ECHO_TEST_SECRET": SECRET, "ECHO_TEST_TOKEN": TOKEN}
    connection = McpConnection("echo", config, environ)
    try:
        with pytest.raises(McpServerError) as failed:
            connection.start()
    finally:
        connection.close()
    assert "no tools for key [redacted]" in str(failed.value)
    assert SECRET not in str(failed.value)
