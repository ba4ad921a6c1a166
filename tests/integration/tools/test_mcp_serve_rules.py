"""``harness mcp serve-sample --http`` keeps the rule of every server we start, and names itself.

Without API keys it binds to loopback only (another address: exit 2, one line) and answers only
this machine's own clients; with HARNESS_API_KEYS every request needs one of the keys. Its
``serverInfo.version`` is the harness's, and each tool says it is read-only, idempotent and of a
closed world (the service's own sample data).
"""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from infrastructure.version import harness_version
from tests.integration.tools._harness_mcp import http_harness
from tests.integration.tools._mcp import HARNESS_BIN

KEY = "sample-key-0123456789abcdef"
KEYS = json.dumps([{"key": KEY, "name": "ann", "role": "auditor"}])
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _env(**more: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")} | more


def _serving(env: dict[str, str]) -> AbstractContextManager[str]:
    """``serve-sample --http`` on a free loopback port; its URL once it answers."""
    return http_harness(env, "serve-sample")


def _post(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """An MCP initialize request, retried while the server is still starting to listen."""
    for _ in range(600):
        try:
            return httpx.post(url, json=INITIALIZE, headers=MCP_HEADERS | (headers or {}))
        except httpx.ConnectError:
            anyio.run(anyio.sleep, 0.05)
    pytest.fail(f"nothing answered at {url}")


async def _introduce(url: str, headers: dict[str, str]) -> tuple[Any, list[Any]]:
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return client.server_info, list((await client.list_tools()).tools)


@pytest.mark.parametrize("server", ["serve-sample", "serve"])
def test_without_keys_another_address_is_refused_with_one_line_and_exit_2(
    server: str, tmp_path: Path
) -> None:
    command = [str(HARNESS_BIN), "mcp", server, "--http", "--host", "0.0.0.0"]
    env = _env(HARNESS_DATABASE_URL=f"sqlite:///{tmp_path / 'h.db'}")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "refusing to serve on 0.0.0.0 without API keys" in done.stderr
    assert "HARNESS_API_KEYS" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    assert not (tmp_path / "h.db").exists()  # refused before anything was set up


def test_with_keys_a_request_without_a_key_is_refused_and_one_with_it_is_served() -> None:
    with _serving(_env(HARNESS_API_KEYS=KEYS)) as url:
        refused = _post(url)
        assert refused.status_code == 401, refused.text
        assert refused.headers["www-authenticate"] == "Bearer"
        assert "API key is required" in refused.json()["detail"]
        wrong = _post(url, {"Authorization": "Bearer not-the-key-0123456789"})
        assert (wrong.status_code, wrong.json()["detail"]) == (401, "the API key is not valid")
        assert KEY not in refused.text + wrong.text
        info, tools = anyio.run(_introduce, url, {"Authorization": f"Bearer {KEY}"})
    assert info is not None and info.version == harness_version() != ""
    assert len(tools) == 4


def test_without_keys_a_page_of_another_site_is_refused_and_the_tools_say_what_they_are() -> None:
    with _serving(_env()) as url:
        rebound = _post(url, {"Host": "evil.example", "Origin": "http://evil.example"})
        assert rebound.status_code == 403, rebound.text
        assert "open it as 127.0.0.1 or localhost" in rebound.json()["detail"]
        info, tools = anyio.run(_introduce, url, {})
    assert info is not None and (info.name, info.version) == (
        "harness-sample-ops",
        harness_version(),
    )
    for tool in tools:
        hints = tool.annotations
        assert hints is not None, tool.name
        assert (hints.read_only_hint, hints.destructive_hint) == (True, False), tool.name
        assert (hints.idempotent_hint, hints.open_world_hint) == (True, False), tool.name
