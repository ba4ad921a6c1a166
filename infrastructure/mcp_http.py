"""The HTTP client of a Streamable HTTP tool server, with each JSON answer bounded as it streams.

The SDK reads an ``application/json`` answer whole (``response.aread()``) and bounds an SSE event
at a size it is given. This client gives every POST answer of type ``application/json`` a body
that stops at ``max_bytes``: past it the read fails with :class:`MessageTooLarge` (an httpx
stream error, which the SDK turns into an error for that request; ``infrastructure.mcp_errors``
makes it SIZE). The long-lived SSE stream is left to the SDK's per-event bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx2
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from infrastructure.mcp_lines import too_large_words

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


SESSION_HEADER = "mcp-session-id"
MAX_SESSION_ID = 128
"""Characters of a session id kept (the specification's are visible ASCII, a uuid or so)."""


class MessageTooLarge(httpx2.StreamError):
    """An answer went past the limit; the rest of it is not read."""


class _CappedBody(httpx2.AsyncByteStream):
    """A response body that fails once more than ``limit`` bytes have come."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                raise MessageTooLarge(too_large_words(self.limit))
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class SessionSeen:
    """The ``Mcp-Session-Id`` the server last gave ('' when none): a trace's ``mcp.session.id``.

    The SDK keeps the id to itself; the transport reads it off each answer as it passes.
    """

    def __init__(self) -> None:
        """None seen yet."""
        self.id = ""


class BoundedTransport(httpx2.AsyncBaseTransport):
    """Gives each ``application/json`` answer a body capped at ``limit`` bytes."""

    def __init__(
        self, inner: httpx2.AsyncBaseTransport, limit: int, seen: SessionSeen | None = None
    ) -> None:
        """Wrap ``inner``; note the session id of each answer in ``seen``."""
        self.inner = inner
        self.limit = limit
        self.seen = seen or SessionSeen()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """The inner transport's response, its JSON body capped."""
        response = await self.inner.handle_async_request(request)
        self.seen.id = response.headers.get(SESSION_HEADER, self.seen.id)[:MAX_SESSION_ID]
        kind = response.headers.get("content-type", "").lower()
        if kind.startswith("application/json") and isinstance(
            response.stream, httpx2.AsyncByteStream
        ):
            response.stream = _CappedBody(response.stream, self.limit)
        return response

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


def bounded_http_client(
    headers: dict[str, str], max_bytes: int, seen: SessionSeen | None = None
) -> httpx2.AsyncClient:
    """An httpx client as the SDK's ``create_mcp_http_client`` makes it, answers capped.

    The session id each answer carries is noted in ``seen``.
    """
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    transport = BoundedTransport(httpx2.AsyncHTTPTransport(), max_bytes, seen)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, transport=transport)
