"""A client that follows the WHATWG EventSource processing model, as a browser does.

It connects, dispatches events, keeps the last event id and the reconnection time (``retry:``),
and when the stream ends it reconnects with ``Last-Event-ID``; it stops for good ("fails the
connection") on any status but 200, a 204 included, or on a body that is not an event stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx

from tests.api._serve import Event, _lines

DEFAULT_RETRY_MS = 3000
"""A browser's usual reconnection time before the server sets one."""


@dataclass
class Connection:
    """One request of the event source: the Last-Event-ID it sent and how it was answered."""

    last_event_id: str | None
    status: int
    events: int = 0


@dataclass
class EventSource:
    """Reads ``url`` like a browser's ``EventSource`` until the connection fails.

    ``wait`` is called with the reconnection time (ms) before each reconnection: a test records
    it instead of sleeping. At most ``max_connections`` requests, so a server that never says
    stop fails the test instead of hanging it.
    """

    client: httpx.Client
    url: str
    on_event: Callable[[Event], None] = lambda event: None
    wait: Callable[[int], None] = lambda ms: None
    max_connections: int = 5
    retry_ms: int = DEFAULT_RETRY_MS
    last_event_id: str = ""
    events: list[Event] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)

    def run(self) -> None:
        """Connect, reconnect after each end of stream, and return once the connection fails."""
        while len(self.connections) < self.max_connections:
            if self.connections:
                self.wait(self.retry_ms)
            if not self._connect():
                return
        raise AssertionError(f"still reconnecting after {self.max_connections} connections")

    def _connect(self) -> bool:
        """One request; whether to reconnect (the stream ended) or not (the connection failed)."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        with self.client.stream("GET", self.url, headers=headers) as response:
            connection = Connection(headers.get("Last-Event-ID"), response.status_code)
            self.connections.append(connection)
            media = response.headers.get("content-type", "").split(";")[0].strip()
            if response.status_code != 200 or media != "text/event-stream":
                return False  # "fail the connection": an EventSource never reconnects
            for event in self._parse(response):
                connection.events += 1
                self.events.append(event)
                self.on_event(event)
        return True

    def _parse(self, response: httpx.Response) -> Iterator[Event]:
        """The dispatched events of one response, applying ``id`` and ``retry`` as they come."""
        kind, data = "", ""
        for line in _lines(response):
            if line == "":
                if data:
                    last = int(self.last_event_id) if self.last_event_id else None
                    yield Event(last, kind or "message", json.loads(data.removesuffix("\n")))
                kind, data = "", ""
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                kind = value
            elif name == "data":
                data += value + "\n"
            elif name == "id" and "\0" not in value:
                self.last_event_id = value  # kept across events and reconnections
            elif name == "retry" and value.isascii() and value.isdigit():
                self.retry_ms = int(value)
