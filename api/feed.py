"""Server-Sent Events from the ``sse_event`` projection: replay, resume and follow live.

A stream first reads its run's feed from the table (after ``Last-Event-ID``), then receives new
entries from the :class:`FeedHub` of its worker: the in-process feed follower hands it every
committed batch; otherwise (a PostgreSQL NOTIFY from a projection process, or a poll) it reads
the new entries of every watched run in one query. Either way it hands them to the streams
watching them, one call into their event loop per batch.
Entries are numbered per run (the SSE ``id:``); a stream skips what it has already sent, so
the replay and the live hand-over may overlap but never leave a gap.

While the database is away a stream stays open: a read that fails is tried again (a comment
says so), and a stream waiting for entries keeps its keep-alives; it goes on where it was once
the database is back. After :data:`OUTAGE_KEEPALIVES` keep-alive intervals without the database
it ends with an ``unavailable`` event instead (resume it with ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from sqlalchemy.exc import SQLAlchemyError
from starlette.responses import StreamingResponse

from api.errors import RETRY_AFTER
from application.views import encode_json
from projections.queries import feed_after, feed_closed, feed_position, feed_since

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from sqlalchemy import Engine

log = logging.getLogger(__name__)

STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
OUTAGE_KEEPALIVES = 4
"""Keep-alive intervals a stream waits for the database to come back before it ends."""
RETRY_PAUSE = 0.5
"""Seconds at most between a stream's tries to read while the database is away."""


class DatabaseAway(Exception):
    """The database has been unavailable for longer than a stream waits."""


@dataclass(eq=False)
class Subscription:
    """One stream's interest in one run's feed."""

    run_id: str
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)


class FeedHub:
    """Delivers new feed entries to the streams of this worker.

    Entries arrive two ways. In process, the feed follower hands over each committed batch
    (:meth:`publish`): no query at all. Otherwise (the projections in another process, a
    missed hand-over, a poll), a wake-up reads the new entries of every watched run in one
    query. The mark says up to which log position the watching streams have been served; a
    hand-over that does not start at or before it is left to the query.
    """

    def __init__(self, engine: Engine, wake: threading.Event, poll_interval: float) -> None:
        """Read from ``engine``; ``wake`` is set when the projections advanced."""
        self.engine = engine
        self.wake = wake
        self.poll_interval = poll_interval
        self._subscriptions: dict[str, set[Subscription]] = {}
        self._lock = threading.Lock()
        self._mark: int | None = None
        """Every entry at or before this log position went to the streams that were watching."""
        self._generation = 0
        """Counts the times the mark was dropped (no stream left), so a delivery that read
        before that never moves a mark set after it."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="harness-feed", daemon=True)
        self._failing_since: float | None = None
        """When the hub's reads began to fail (monotonic), None while they succeed."""

    def start(self) -> FeedHub:
        """Start delivering."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop delivering (streams still open end at their next keep-alive)."""
        self._stop.set()
        self.wake.set()
        self._thread.join(timeout=5)

    def subscribe(self, run_id: str, loop: asyncio.AbstractEventLoop) -> Subscription:
        """Watch a run's feed; call before reading its backlog (blocking: run it in a thread)."""
        subscription = Subscription(run_id, loop)
        with self._lock:
            if self._mark is None:  # the first stream: entries after this point are delivered
                with self.engine.connect() as connection:
                    self._mark = feed_position(connection)
            self._subscriptions.setdefault(run_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """Stop watching."""
        with self._lock:
            watching = self._subscriptions.get(subscription.run_id, set())
            watching.discard(subscription)
            if not watching:
                self._subscriptions.pop(subscription.run_id, None)
            if not self._subscriptions:
                self._mark = None
                self._generation += 1

    def outage(self) -> float:
        """Seconds the hub's reads of the feed have been failing (0 when they succeed)."""
        since = self._failing_since
        return 0.0 if since is None else time.monotonic() - since

    @property
    def watched(self) -> int:
        """Streams watching now."""
        with self._lock:
            return sum(len(s) for s in self._subscriptions.values())

    def publish(self, after: int, last: int, rows: list[dict[str, Any]]) -> None:
        """A committed feed batch that applied the log entries ``(after, last]``, and its entries.

        Called by the in-process feed follower, in its thread, right after the commit.
        """
        with self._lock:
            mark = self._mark
            if mark is None:
                return  # nobody is watching
            if mark < after:  # entries between the mark and this batch never came by here
                self.wake.set()
                return
            self._hand_over([row for row in rows if row["position"] > mark])
            self._mark = max(mark, last)
            self._failing_since = None  # a batch committed: the database answers

    def _run(self) -> None:
        while not self._stop.is_set():
            self.wake.wait(self.poll_interval)
            self.wake.clear()
            try:
                self._deliver()
            except SQLAlchemyError as error:
                if self._failing_since is None:
                    self._failing_since = time.monotonic()
                log.warning("feed: reading new entries failed (%s); retrying", _brief(error))
            else:
                self._failing_since = None

    def _deliver(self) -> None:
        with self._lock:
            mark, runs, generation = self._mark, list(self._subscriptions), self._generation
        if mark is None or not runs:
            return
        with self.engine.connect() as connection:
            # The position first: the entries read next include every one committed up to it.
            reached = feed_position(connection)
            rows = feed_since(connection, min(mark, reached), runs)
        with self._lock:
            if self._generation != generation or self._mark is None:
                return  # every stream left meanwhile; a new one started from a fresh mark
            if reached < mark:  # the feed was rebuilt: deliver again from where it is now
                self._mark = mark = reached
            current = self._mark
            self._hand_over([row for row in rows if row["position"] > current])
            self._mark = max(current, reached, *(row["position"] for row in rows))

    def _hand_over(self, rows: list[dict[str, Any]]) -> None:
        """Give each row to the streams watching its run: one call into each event loop.

        Under the lock; the rows are in log order.
        """
        batches: dict[asyncio.AbstractEventLoop, list[tuple[Subscription, dict[str, Any]]]] = {}
        for row in rows:
            for subscription in self._subscriptions.get(row["run_id"], ()):
                batches.setdefault(subscription.loop, []).append((subscription, row))
        for loop, batch in batches.items():
            loop.call_soon_threadsafe(_put_all, batch)


def _put_all(batch: list[tuple[Subscription, dict[str, Any]]]) -> None:
    """In a stream's event loop: queue each row for its stream."""
    for subscription, row in batch:
        subscription.queue.put_nowait(row)


def ends_feed(row: dict[str, Any]) -> bool:
    """Whether nothing follows this entry: ``done``, or a cancelled run's ``failure``."""
    if row["event"] == "done":
        return True
    return bool(row["event"] == "failure" and row["data"].get("release_outcome") == "CANCELLED")


def frame(row: dict[str, Any]) -> str:
    """One entry in the WHATWG event-stream format (``id:`` is its number in the run's feed).

    A row the hub hands to many streams is rendered once (its streams share the row and the
    event loop's thread).
    """
    rendered: str | None = row.get(FRAME)
    if rendered is None:
        data = encode_json(row["data"]).translate(LINE_BREAKS)
        rendered = row[FRAME] = f"id: {row['seq']}\nevent: {row['event']}\ndata: {data}\n\n"
    return rendered


LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}
"""Escaped in a frame's JSON: the event-stream format ends lines only at CR and LF, but many
line-based clients (Python's ``splitlines``, httpx's ``iter_lines``) also break at these."""

FRAME = "_frame"
"""Where a row keeps its rendered frame."""


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
            async for sent, chunk in _follow(hub, run_id, last, keepalive, limit):
                last, failing_since = sent, None  # whatever came was read: the database answers
                yield chunk
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
            log.warning("stream of run %s: reading failed (%s); retrying", run_id, _brief(error))
            yield ": the database is unavailable; retrying\n\n"
            await asyncio.sleep(min(keepalive, RETRY_PAUSE))


def unavailable(run_id: str, seconds: float) -> str:
    """The last event of a stream that gave up waiting for the database.

    It has no ``id``: it is not a feed entry, so ``Last-Event-ID`` still names the last entry
    the client got.
    """
    data = {
        "run_id": run_id,
        "detail": f"the database has been unavailable for {seconds:.0f}s; resume this stream"
        " with Last-Event-ID after Retry-After seconds",
        "retry_after": int(RETRY_AFTER),
    }
    return f"event: unavailable\nretry: {int(RETRY_AFTER) * 1000}\ndata: {encode_json(data)}\n\n"


async def _follow(
    hub: FeedHub, run_id: str, after_seq: int, keepalive: float, limit: float
) -> AsyncIterator[tuple[int, str]]:
    """:func:`follow` without its retries: the last entry sent with each chunk."""
    loop = asyncio.get_running_loop()
    subscription = await anyio.to_thread.run_sync(hub.subscribe, run_id, loop)
    try:
        last = after_seq
        backlog, closed = await anyio.to_thread.run_sync(_read_after, hub.engine, run_id, last)
        if closed and not backlog:
            return  # resumed after the feed's last entry: there is nothing more to send
        while True:
            chunk, last, ended = _frames(backlog, last)
            if chunk:
                yield last, chunk  # what arrived together goes out in one write
            if ended:
                return
            try:
                row = await asyncio.wait_for(subscription.queue.get(), keepalive)
            except TimeoutError:
                if hub.outage() > limit:
                    raise DatabaseAway from None
                yield last, ": keep-alive\n\n"
                backlog = []
                continue
            arrived = [row, *_drain(subscription.queue)]
            if arrived[0]["seq"] <= last + 1:
                backlog = arrived
            else:  # entries in between were not handed over: read them from the table
                backlog, _ = await anyio.to_thread.run_sync(_read_after, hub.engine, run_id, last)
    finally:
        hub.unsubscribe(subscription)


def _frames(rows: list[dict[str, Any]], last: int) -> tuple[str, int, bool]:
    """The frames of the rows after entry ``last``, the last entry now, and whether it ends."""
    chunk: list[str] = []
    for row in rows:
        if row["seq"] <= last:
            continue
        last = row["seq"]
        chunk.append(frame(row))
        if ends_feed(row):
            return "".join(chunk), last, True
    return "".join(chunk), last, False


def _brief(error: BaseException) -> str:
    """The driver's first line of a database error (no SQL, no parameters)."""
    lines = str(getattr(error, "orig", None) or error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


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
    """The entries after ``after_seq``, and whether the feed had ended before they were read.

    The flag is read first: it commits with the feed's last entry, so when it is set the entries
    read next include that entry.
    """
    with engine.connect() as connection:
        closed = feed_closed(connection, run_id)
        return feed_after(connection, run_id, after_seq), closed


class EventStream(StreamingResponse):
    """A ``text/event-stream`` response that tells ``on_abandon`` when the client left early.

    "Early" is before the feed's last entry was sent: a client that disconnects mid-run. The
    callback runs in a thread of its own (it may append to the store); nothing more is sent.
    """

    media_type = "text/event-stream"

    def __init__(
        self, feed: AsyncIterator[str], on_abandon: Callable[[], None] | None = None
    ) -> None:
        """Stream ``feed``; call ``on_abandon`` if the client goes before it ends."""
        super().__init__(_watched(feed, on_abandon), headers=STREAM_HEADERS)


async def _watched(
    feed: AsyncIterator[str], on_abandon: Callable[[], None] | None
) -> AsyncIterator[str]:
    try:
        async for chunk in feed:
            yield chunk
    except (asyncio.CancelledError, GeneratorExit):  # the client went away mid-feed
        if on_abandon is not None:
            threading.Thread(target=on_abandon, name="harness-abandon", daemon=True).start()
        raise
