"""One run's feed as Server-Sent Events: replayed from the table, resumed, then followed live.

A stream first reads its run's feed from the ``sse_event`` table (after ``Last-Event-ID``), then
receives new entries from the :class:`~api.feed_hub.FeedHub` of its worker. Entries are
numbered per run (the SSE ``id:``); a stream skips what it has already sent, so the replay and
the live hand-over may overlap but never leave a gap.

While the database is away a stream stays open: a read that fails is tried again (a comment
says so), and a stream waiting for entries keeps its keep-alives; it goes on where it was once
the database is back. After :data:`OUTAGE_KEEPALIVES` keep-alive intervals without the database
it ends with an ``unavailable`` event instead (resume it with ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from sqlalchemy.exc import SQLAlchemyError

from api.errors import first_line
from api.sse_wire import KEEPALIVE, RETRYING, frame, unavailable
from projections.queries import feed_backlog
from projections.sse_feed import ends_feed

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from sqlalchemy import Engine

    from api.feed_hub import FeedHub, Subscription

log = logging.getLogger(__name__)

OUTAGE_KEEPALIVES = 4
"""Keep-alive intervals a stream waits for the database to come back before it ends."""
RETRY_PAUSE = 0.5
"""Seconds at most between a stream's tries to read while the database is away."""


class DatabaseAway(Exception):
    """The database has been unavailable for longer than a stream waits."""


async def follow(hub: FeedHub, run_id: str, after_seq: int, keepalive: float) -> AsyncIterator[str]:
    """The run's feed after ``after_seq``: replayed from the table, then live, then it ends.

    A read that fails because the database is away is tried again from the last entry sent;
    after :data:`OUTAGE_KEEPALIVES` keep-alive intervals without it the stream ends with an
    ``unavailable`` event.
    """
    last, failing_since = after_seq, None
    limit = OUTAGE_KEEPALIVES * keepalive
    while True:
        try:
            async for sent, rows in _follow(hub, run_id, last, keepalive, limit):
                last, failing_since = sent, None  # whatever came was read: the database answers
                yield "".join(frame(row) for row in rows) if rows else KEEPALIVE
            return
        except DatabaseAway:
            yield unavailable(run_id, hub.outage())
            return
        except SQLAlchemyError as error:
            now = time.monotonic()
            failing_since = failing_since or now
            if now - failing_since >= limit:
                yield unavailable(run_id, now - failing_since)
                return
            brief = first_line(error)
            log.warning("stream of run %s: reading failed (%s); retrying", run_id, brief)
            yield RETRYING
            await asyncio.sleep(min(keepalive, RETRY_PAUSE))


async def _follow(
    hub: FeedHub, run_id: str, after_seq: int, keepalive: float, limit: float
) -> AsyncIterator[tuple[int, list[dict[str, Any]]]]:
    """:func:`follow` without retries, in entries: each batch (none: a keep-alive) and its last."""
    loop = asyncio.get_running_loop()
    subscription = await _subscribed(hub, run_id, loop)
    try:
        last = after_seq
        backlog, closed = await anyio.to_thread.run_sync(_read_after, hub.engine, run_id, last)
        if closed and not backlog:
            return  # resumed after the feed's last entry: there is nothing more to send
        while True:
            fresh, last, ended = _fresh(backlog, last)
            if fresh:
                yield last, fresh  # what arrived together goes out in one write
            if ended:
                # Its last entry is out; let the other streams that were handed the same entry
                # send it before this one's ending and teardown (a fan-out's median waits less).
                await asyncio.sleep(0)
                return
            try:
                async with asyncio.timeout(keepalive):  # no task of its own, unlike wait_for
                    row = await subscription.queue.get()
            except TimeoutError:
                if hub.outage() > limit:
                    raise DatabaseAway from None
                yield last, []
                backlog = []
                continue
            # Hand-overs of one run may pass each other (two appending threads, the follower):
            # in order of number, and only without a gap after the last entry sent.
            arrived = sorted([row, *_drain(subscription.queue)], key=lambda r: r["seq"])
            if _follows_on(arrived, last):
                backlog = arrived
            else:  # entries in between were not handed over: read them from the table
                backlog, _ = await anyio.to_thread.run_sync(_read_after, hub.engine, run_id, last)
    finally:
        hub.unsubscribe(subscription)


async def _subscribed(hub: FeedHub, run_id: str, loop: asyncio.AbstractEventLoop) -> Subscription:
    """:meth:`FeedHub.subscribe`, in a thread; a stream cancelled meanwhile leaves nothing behind.

    A cancelled wait does not stop the thread (the client left): the subscription it makes
    is removed as soon as it is made.
    """
    making = asyncio.ensure_future(anyio.to_thread.run_sync(hub.subscribe, run_id, loop))
    try:
        return await asyncio.shield(making)
    except asyncio.CancelledError:
        making.add_done_callback(partial(_unsubscribe_made, hub))
        raise


def _unsubscribe_made(hub: FeedHub, making: asyncio.Future[Subscription]) -> None:
    if not making.cancelled() and making.exception() is None:
        hub.unsubscribe(making.result())


def _fresh(rows: list[dict[str, Any]], last: int) -> tuple[list[dict[str, Any]], int, bool]:
    """The rows after entry ``last``, the last entry now, and whether the feed ends."""
    fresh: list[dict[str, Any]] = []
    for row in rows:
        if row["seq"] > last:
            last = row["seq"]
            fresh.append(row)
        if ends_feed(row["event"], row["data"]):  # sent now, or already (made ahead, resumed)
            return fresh, last, True
    return fresh, last, False


async def entries(hub: FeedHub, run_id: str, keepalive: float) -> AsyncIterator[dict[str, Any]]:
    """The run's feed entries from its first to its last, as they come (not SSE frames).

    For a watcher that is no event stream (``harness mcp serve``'s tool calls). A database
    away for longer than a stream waits raises :class:`DatabaseAway`; a failing read raises.
    """
    async for _, rows in _follow(hub, run_id, 0, keepalive, OUTAGE_KEEPALIVES * keepalive):
        for row in rows:
            yield row


def _follows_on(rows: list[dict[str, Any]], last: int) -> bool:
    """Whether the rows (in order of number) leave no entry out after entry ``last``."""
    for row in rows:
        if row["seq"] > last + 1:
            return False
        last = max(last, row["seq"])
    return True


def _drain(queue: asyncio.Queue[dict[str, Any]]) -> list[dict[str, Any]]:
    """Whatever else is already waiting in ``queue``."""
    found = []
    while not queue.empty():
        found.append(queue.get_nowait())
    return found


def feed_ended(engine: Engine, run_id: str, after_seq: int) -> bool:
    """Whether a stream resumed after entry ``after_seq`` has nothing to send, ever.

    True when the feed has its last entry and none after ``after_seq``. Blocking: run it in a
    thread.
    """
    backlog, closed = _read_after(engine, run_id, after_seq)
    return closed and not backlog


def _read_after(engine: Engine, run_id: str, after_seq: int) -> tuple[list[dict[str, Any]], bool]:
    """The entries after ``after_seq``, and whether the feed has its last entry (read together)."""
    with engine.connect() as connection:
        return feed_backlog(connection, run_id, after_seq)
