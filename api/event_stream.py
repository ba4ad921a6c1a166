"""The HTTP response of a run's feed: ``text/event-stream``, sent straight to the server.

One stream of many that a worker may be sending the same entry to at once: each chunk goes to
the server in one call, and nothing runs beside the body but one waiter that notices the client
leaving (Starlette's ``StreamingResponse`` runs the body in a task group of its own, whose
cancellation at the end costs more than sending the entry).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, NoReturn, Protocol

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


class OpenStreamsByKey(Protocol):
    """A gauge of the streams being sent, labelled by the key they are sent to."""

    def labels(self, *values: str) -> OpenStreams:
        """The gauge of one key."""
        ...


STREAMS_RETRY_AFTER = 5
"""Seconds a client refused a stream waits before asking again."""


class StreamCount:
    """The event streams this worker sends now: counted into the gauges, and capped.

    A stream is counted from the moment it is admitted (:meth:`take`), not when its body starts:
    a burst of requests that all passed a check before any of them had started sending would
    overrun the cap. Counted in the event loop only, so the check and the count are one step.
    Each key has a share too (``per_key``), so one key's streams cannot take every place.
    """

    def __init__(
        self, gauges: tuple[OpenStreams, OpenStreamsByKey], cap: int, per_key: int | None = None
    ) -> None:
        """Count into ``gauges`` (all; by key); refuse beyond ``cap``, or one key's ``per_key``."""
        self.gauge, self.by_key = gauges
        self.cap = cap
        self.per_key = per_key
        self.open = 0
        self.owners: dict[str, int] = {}

    def take(self, owner: str) -> StreamSlot:
        """Admit one more stream of ``owner``'s, or refuse it (429, Retry-After).

        Refused while the key has its share open, or while the worker is full. The slot is
        given back by the stream once it ends, or by the route if it fails first.
        """
        mine = self.owners.get(owner, 0)
        if self.per_key is not None and mine >= self.per_key:
            _refuse(
                f"{owner} already has {mine} event streams open on this worker, as many as one key"
                " may (HARNESS_MAX_STREAMS_PER_KEY)"
            )
        if self.open >= self.cap:
            _refuse(f"this worker already sends its {self.cap} event streams (HARNESS_MAX_STREAMS)")
        self.open += 1
        self.owners[owner] = mine + 1
        self.gauge.inc()
        self.by_key.labels(owner).inc()
        return StreamSlot(self, owner)

    def _give_back(self, owner: str) -> None:
        self.open -= 1
        self.owners[owner] -= 1
        if not self.owners[owner]:
            del self.owners[owner]
        self.gauge.dec()
        self.by_key.labels(owner).dec()


def _refuse(why: str) -> NoReturn:
    raise HTTPException(
        429,
        f"{why}; retry in {STREAMS_RETRY_AFTER}s",
        headers={"Retry-After": str(STREAMS_RETRY_AFTER)},
    )


class StreamSlot:
    """One admitted stream's place in the count; released once, however often it is asked."""

    def __init__(self, count: StreamCount, owner: str) -> None:
        """Held in ``count`` for ``owner`` until :meth:`release`."""
        self._count: StreamCount | None = count
        self.owner = owner

    def release(self) -> None:
        """Give the place back (again: nothing)."""
        count, self._count = self._count, None
        if count is not None:
            count._give_back(self.owner)


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
        slot: StreamSlot | None = None,
    ) -> None:
        """Stream ``feed``; call ``on_abandon`` if the client goes before it ends.

        ``slot``, the stream's place in the worker's count, is released when the body ends.
        """
        self.status_code = 200
        self.background = None
        self.init_headers(STREAM_HEADERS)
        self.feed = feed
        self.on_abandon = on_abandon
        self.slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the feed; a client that leaves cancels the body where it waits."""
        abandon = self.on_abandon
        watch = _Departure(asyncio.current_task())
        waiter = asyncio.ensure_future(_disconnected(receive))
        waiter.add_done_callback(watch.left)
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
            if self.slot is not None:
                self.slot.release()


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
