"""The HTTP response of a run's feed: ``text/event-stream``, sent straight to the server.

One stream of many that a worker may be sending the same entry to at once: each chunk goes to
the server in one call, and nothing runs beside the body but one waiter that notices the client
leaving (Starlette's ``StreamingResponse`` runs the body in a task group of its own, whose
cancellation at the end costs more than sending the entry).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Protocol

from fastapi import HTTPException
from starlette.responses import Response

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from starlette.types import Receive, Scope, Send

STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
BODY = "http.response.body"


class OpenStreams(Protocol):
    """A gauge of the streams being sent (``prometheus_client.Gauge``)."""

    def inc(self, amount: float = 1) -> None:
        """One more."""
        ...

    def dec(self, amount: float = 1) -> None:
        """One fewer."""
        ...


STREAMS_RETRY_AFTER = 5
"""Seconds a client refused a stream waits before asking again."""


class StreamCount:
    """The event streams this worker sends now: counted into the gauge, and capped.

    Counted in the event loop only (when a stream starts and ends sending), so no lock.
    """

    def __init__(self, gauge: OpenStreams, cap: int) -> None:
        """Count into ``gauge``; refuse new streams beyond ``cap``."""
        self.gauge = gauge
        self.cap = cap
        self.open = 0

    def inc(self, amount: float = 1) -> None:
        """One more stream is being sent."""
        self.open += int(amount)
        self.gauge.inc(amount)

    def dec(self, amount: float = 1) -> None:
        """One fewer."""
        self.open -= int(amount)
        self.gauge.dec(amount)

    def check(self) -> None:
        """Refuse a new stream (429, Retry-After) while this worker sends as many as it may."""
        if self.open >= self.cap:
            raise HTTPException(
                429,
                f"this worker already sends its {self.cap} event streams (HARNESS_MAX_STREAMS);"
                f" retry in {STREAMS_RETRY_AFTER}s",
                headers={"Retry-After": str(STREAMS_RETRY_AFTER)},
            )


class EventStream(Response):
    """A ``text/event-stream`` response that tells ``on_abandon`` when the client left early.

    "Early" is before the feed's last entry was sent: a client that disconnects mid-run. The
    callback runs in a thread of its own (it may append to the store); nothing more is sent.
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        feed: AsyncIterator[str],
        on_abandon: Callable[[], None] | None = None,
        open_streams: OpenStreams | None = None,
    ) -> None:
        """Stream ``feed``; call ``on_abandon`` if the client goes before it ends.

        ``open_streams`` is raised by one while the body is being sent (the metrics' gauge).
        """
        self.status_code = 200
        self.background = None
        self.init_headers(STREAM_HEADERS)
        self.feed = feed
        self.on_abandon = on_abandon
        self.open_streams = open_streams

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the feed; a client that leaves cancels the body where it waits."""
        abandon = self.on_abandon
        watch = _Departure(asyncio.current_task())
        waiter = asyncio.ensure_future(_disconnected(receive))
        waiter.add_done_callback(watch.left)
        if self.open_streams is not None:
            self.open_streams.inc()
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for chunk in self.feed:
                await send({"type": BODY, "body": chunk.encode(), "more_body": True})
            watch.finished = True
            await send({"type": BODY, "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not watch.gone:
                raise
            watch.uncancel()  # the client left mid-feed: not an error of this response
            if abandon is not None:  # in a thread of its own: it may append to the store
                threading.Thread(target=abandon, name="harness-abandon", daemon=True).start()
        finally:
            waiter.remove_done_callback(watch.left)
            waiter.cancel()
            if self.open_streams is not None:
                self.open_streams.dec()


class _Departure:
    """Cancels the body's task when the client leaves before the feed's end."""

    def __init__(self, task: asyncio.Task[object] | None) -> None:
        self.task = task
        self.finished = False
        self.gone = False

    def left(self, waiter: asyncio.Future[None]) -> None:
        if waiter.cancelled() or self.finished or self.task is None:
            return  # the response ended first (the server reports its end as a disconnect)
        self.gone = True
        self.task.cancel()

    def uncancel(self) -> None:
        if self.task is not None:
            self.task.uncancel()


async def _disconnected(receive: Receive) -> None:
    """Return when the server says the client has gone."""
    while (await receive())["type"] != "http.disconnect":
        pass
