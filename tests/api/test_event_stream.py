"""The feed's response at the ASGI level: what it sends, and what a client leaving does.

The server side is a pair of plain ASGI callables recording the messages; the feed is an async
generator like ``api.feed.follow``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

from api.event_stream import EventStream

WAIT = 30.0
"""Seconds a test waits before it fails (a bound, not a timing)."""


class Server:
    """An ASGI server's side of one request: the messages sent, and a client that may leave."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.gone = asyncio.Event()

    async def receive(self) -> MutableMapping[str, Any]:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.sent.append(dict(message))

    @property
    def bodies(self) -> list[tuple[bytes, bool]]:
        return [(m["body"], m["more_body"]) for m in self.sent if m["type"] == "http.response.body"]


async def feed(*chunks: str) -> AsyncIterator[str]:
    for chunk in chunks:
        yield chunk


def test_each_chunk_is_one_message_and_the_end_an_empty_one() -> None:
    server = Server()

    response = EventStream(feed("id: 1\n\n", "id: 2\n\n"))

    asyncio.run(response({"type": "http"}, server.receive, server.send))

    assert server.sent[0]["type"] == "http.response.start"
    assert server.sent[0]["status"] == 200
    assert (b"content-type", b"text/event-stream; charset=utf-8") in server.sent[0]["headers"]
    assert server.bodies == [(b"id: 1\n\n", True), (b"id: 2\n\n", True), (b"", False)]


def test_a_client_leaving_mid_feed_ends_it_quietly_and_is_reported() -> None:
    server = Server()
    abandoned = threading.Event()
    waiting = asyncio.Event()

    async def endless() -> AsyncIterator[str]:
        yield "id: 1\n\n"
        waiting.set()
        await asyncio.Event().wait()  # a run that has nothing more yet
        yield "never"

    async def scenario() -> None:
        response = EventStream(endless(), on_abandon=abandoned.set)
        serving = asyncio.ensure_future(response({"type": "http"}, server.receive, server.send))
        async with asyncio.timeout(WAIT):
            await waiting.wait()
            server.gone.set()
            await serving  # returns: leaving is not an error of the response

    asyncio.run(scenario())
    assert abandoned.wait(WAIT)
    assert server.bodies == [(b"id: 1\n\n", True)]
