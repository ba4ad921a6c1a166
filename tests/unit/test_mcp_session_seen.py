"""The Streamable HTTP client keeps the ``Mcp-Session-Id`` a server gives (a span's session)."""

from __future__ import annotations

import asyncio

import httpx2

from infrastructure.endpoints import host_port
from infrastructure.mcp_http import BoundedTransport, SessionSeen


def _server(request: httpx2.Request) -> httpx2.Response:
    """Gives a session at ``initialize``; answers later requests without the header."""
    if b"initialize" in request.content:
        return httpx2.Response(200, headers={"Mcp-Session-Id": "a1b2c3"}, json={})
    return httpx2.Response(202)


def test_the_session_id_a_server_gives_is_kept_until_it_gives_another() -> None:
    seen = SessionSeen()

    async def exchange() -> None:
        transport = BoundedTransport(httpx2.MockTransport(_server), 1000, seen)
        async with httpx2.AsyncClient(transport=transport) as client:
            assert seen.id == ""
            await client.post("http://mcp.test/mcp", content=b'{"method": "initialize"}')
            await client.post("http://mcp.test/mcp", content=b'{"method": "tools/call"}')

    asyncio.run(exchange())
    assert seen.id == "a1b2c3"


def test_a_server_is_named_by_its_host_and_port_never_its_credentials() -> None:
    assert host_port("https://user:secret@api.example.com/v1?key=k") == ("api.example.com", 443)
    assert host_port("http://127.0.0.1:8765/mcp") == ("127.0.0.1", 8765)
    assert host_port("http://[::1]:99999/") == ("::1", 80)  # not a port: the scheme's default
