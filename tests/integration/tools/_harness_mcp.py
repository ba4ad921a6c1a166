"""``harness mcp serve`` as a real process, and the SDK's client of it (stdio or HTTP)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.api._serve import free_port
from tests.integration.tools._mcp import HARNESS_BIN

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
HANGS = f"scripted:{SCENARIOS / 'client_disconnected.yaml'}"
"""Routes to DIAGNOSIS, then the model never answers until the run is cancelled."""
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"


def harness_env(database: Path, **more: str) -> dict[str, str]:
    """This environment without HARNESS_* settings, on the SQLite file ``database``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    return kept | {"HARNESS_DATABASE_URL": f"sqlite:///{database}"} | more


@asynccontextmanager
async def stdio_harness(env: dict[str, str]) -> AsyncIterator[Client]:
    """A client of ``harness mcp serve`` over its stdin and stdout."""
    params = StdioServerParameters(command=str(HARNESS_BIN), args=["mcp", "serve"], env=env)
    async with Client(stdio_client(params)) as client:
        yield client


@contextmanager
def http_harness(env: dict[str, str], server: str = "serve") -> Iterator[str]:
    """``harness mcp serve --http`` (or ``serve-sample``) on a free loopback port; its URL once
    it is bound."""
    port = free_port()
    command = [str(HARNESS_BIN), "mcp", server, "--http", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        for line in process.stderr:  # the tools' summary may come first
            found = re.search(r"http://[\d.]+:\d+/mcp", line)
            if found:
                yield found.group(0)
                return
        raise AssertionError(f"it stopped without serving (exit {process.wait()})")
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


@asynccontextmanager
async def http_client(url: str, key: str | None) -> AsyncIterator[Client]:
    """A client of the served URL, sending ``key`` as its bearer token (none: no header)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client
