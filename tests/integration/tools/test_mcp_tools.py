"""The shipped MCP server over real stdio and real HTTP gives the built-in tools' diagnosis.

The harness asks the sample question with the offline model three times: with its built-in
tools, with only ``harness mcp serve-sample`` as a stdio server (the README's example
configuration, as written), and with only that server over Streamable HTTP in a process of its
own. The published diagnoses are equal once invocation ids are numbered in order of appearance.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bootstrap.composition import Overrides, bootstrap
from domain.tool_invocation import ToolInvocation
from infrastructure.settings import Settings
from infrastructure.tool_config import load_tools_config
from tests.integration.tools._mcp import HARNESS_BIN, write_config

QUESTION = "Why was checkout slow on 2026-11-29?"
EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "tools-sample-mcp.toml"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _diagnosis(tmp_path: Path, config: Path | None) -> tuple[str, str, list[str]]:
    """Outcome, published content (ids numbered) and the tools' origins of one offline run."""
    folder = tmp_path / ("builtin" if config is None else config.stem)
    folder.mkdir()
    settings = Settings(database_url=f"sqlite:///{folder / 'h.db'}", tools_config=config)
    with bootstrap(settings, create=True, sample=True, overrides=Overrides(heartbeat=False)) as s:
        result = s.chat.ask("s", QUESTION)
        notifications = s.store.recorder.select_notifications(start=1, limit=10_000)
        events = [s.store.mapper.to_domain_event(n) for n in notifications]
    origins = sorted(
        {e.origin for e in events if isinstance(e, ToolInvocation.ToolInvocationStarted)}
    )
    text = json.dumps(result.content, sort_keys=True)
    numbered: dict[str, str] = {}
    text = UUID.sub(lambda m: numbered.setdefault(m.group(), f"ref{len(numbered)}"), text)
    return result.release_outcome.value, text, origins


@pytest.fixture(scope="module")
def builtin(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, list[str]]:
    return _diagnosis(tmp_path_factory.mktemp("builtin"), None)


def test_the_example_configuration_over_stdio_gives_the_builtin_diagnosis(
    builtin: tuple[str, str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{HARNESS_BIN.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)  # its servers' stderr logs go to ./logs
    outcome, content, origins = _diagnosis(tmp_path, EXAMPLE)
    assert (tmp_path / "logs" / "mcp-sample.log").exists()
    assert builtin[:2] == (outcome, content) and outcome == "SUCCESS"
    assert "deploy v2.14.0" in content and '"kind": "diagnosis"' in content
    conclusion = json.loads(content)["conclusion"]
    assert "v2.14.0" in conclusion and "v2.13.4" not in conclusion  # not the day before's deploy
    assert (builtin[2], origins) == (["builtin"], ["mcp:sample"])


def _serve_http(port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """``harness mcp serve-sample --http`` as a process, once it listens; and its URL."""
    command = [str(HARNESS_BIN), "mcp", "serve-sample", "--http", "--port", str(port)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    line = process.stderr.readline()  # printed once the port is bound
    found = re.search(r"http://([\d.]+):(\d+)/mcp", line)
    assert found, f"no URL in {line!r}"
    _wait_for_port(found.group(1), int(found.group(2)), process)
    return process, found.group(0)


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=30)
    if process.stderr is not None:
        process.stderr.close()


@pytest.fixture
def http_server() -> Iterator[str]:
    process, url = _serve_http()
    try:
        yield url
    finally:
        _stop(process)


def _wait_for_port(host: str, port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the MCP server exited"
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail("the MCP server did not listen within 60 s")


def test_the_sample_server_over_http_gives_the_builtin_diagnosis(
    builtin: tuple[str, str, list[str]], tmp_path: Path, http_server: str
) -> None:
    server = {"transport": "http", "url": http_server, "call_timeout": 20}
    config = write_config(tmp_path / "http.toml", {"sample": server})
    assert _diagnosis(tmp_path, config) == (*builtin[:2], ["mcp:sample"])


def test_the_example_configuration_stays_valid() -> None:
    config = load_tools_config(EXAMPLE)
    assert config.builtin == "none"
    server = config.servers["sample"]
    assert (server.transport, server.expose, server.options("x").scope) == (
        "stdio",
        "all",
        "ops:read",
    )


def test_headers_come_from_the_environment_and_a_missing_variable_is_named(
    tmp_path: Path, http_server: str
) -> None:
    server: dict[str, Any] = {"transport": "http", "url": http_server}
    config = write_config(tmp_path / "h.toml", {"s": server})
    text = config.read_text() + 'headers_from_env = { "X-Token" = "MCP_TEST_TOKEN_UNSET" }\n'
    config.write_text(text)
    from infrastructure.settings import ConfigurationError
    from infrastructure.tool_sources import assemble_tools

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'h.db'}", tools_config=config)
    with bootstrap(settings, create=True, overrides=Overrides(heartbeat=False)) as services:
        with pytest.raises(ConfigurationError, match=r"X-Token is to come from \$MCP_TEST_TOKEN"):
            assemble_tools(config, services.engine)
    assert sys.executable  # the harness process itself is unharmed


def test_concurrent_runs_share_one_session_and_get_their_own_answers() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from infrastructure.mcp_client import McpConnection
    from infrastructure.tool_config import StdioServer

    server = StdioServer(transport="stdio", command=str(HARNESS_BIN), args=["mcp", "serve-sample"])
    connection = McpConnection("sample", server)
    window = {"service": "checkout", "start": "2026-11-29T09:00:00Z", "end": "2026-11-29T12:00:00Z"}
    try:
        connection.start()

        def logs(limit: int) -> tuple[int, list[str]]:
            result = connection.call("search_logs", window | {"limit": limit}, 20)
            text = "\n".join(block.text for block in result.content if block.type == "text")
            return limit, [line for line in text.splitlines() if not line.startswith("[")]

        with ThreadPoolExecutor(8) as pool:
            answers = dict(pool.map(logs, range(1, 17)))
        assert connection.starts == 1
    finally:
        connection.close()
    assert {limit: len(lines) for limit, lines in answers.items()} == {n: n for n in range(1, 17)}
    assert all(answers[n] == answers[16][:n] for n in range(1, 17))  # each its own answer


def test_an_http_server_that_goes_away_fails_the_call_and_is_reconnected_when_back() -> None:
    import mcp_types as types

    from application.ports import ToolExecutionError
    from infrastructure.mcp_client import McpConnection
    from infrastructure.mcp_tools import McpTool
    from infrastructure.tool_config import HttpServer, ToolOptions

    process, url = _serve_http()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    connection = McpConnection("remote", HttpServer(transport="http", url=url, call_timeout=10))
    args = {"start": "2026-11-29T00:00:00Z", "end": "2026-12-01T00:00:00Z"}
    try:
        spec = connection.start()["list_alerts"]
        tool = McpTool(connection, spec, ToolOptions())
        first = tool.run(args)
        _stop(process)  # the server goes away between runs
        with pytest.raises(ToolExecutionError) as failed:
            tool.run(args)
        assert "'remote'" in str(failed.value)
        process, _ = _serve_http(port)  # back, on the same address
        assert tool.run(args) == first and connection.starts == 2
        assert isinstance(connection.tools["list_alerts"], types.Tool)
    finally:
        connection.close()
        _stop(process)
