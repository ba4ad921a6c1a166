"""The hub of a worker's streams: it brings them the new entries of the runs they watch.

Entries arrive two ways. In process, the feed follower hands each committed batch to
:meth:`FeedHub.publish`: no query at all. Otherwise (a PostgreSQL NOTIFY from a projection
process, or a poll) the hub reads the new entries of every watched run in one query. Either way
it hands them to the streams watching them, one call into their event loop per batch.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from api.errors import first_line
from api.sse_wire import frame
from projections.queries import feed_position, feed_since
from projections.sse_feed import ends_feed

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy import Engine

log = logging.getLogger(__name__)

ENDED_AHEAD_KEPT = 1024
"""How many runs' feed endings made ahead of the table a hub remembers (the newest ones)."""


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
        self._ended_ahead: OrderedDict[str, int] = OrderedDict()
        """Run id → number of its feed's last entry, for feeds whose ending this process made
        ahead of the table (:meth:`ahead`): a stream may have sent it before the table has it."""

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
            if self._mark is not None:
                self._subscriptions.setdefault(run_id, set()).add(subscription)
                return subscription
        # The first stream: entries after this point are delivered. Read outside the lock,
        # which the appending threads take (:meth:`ahead`): a slow read never holds them up.
        # A batch committed after this read finds the mark behind it and is read again.
        with self.engine.connect() as connection:
            position = feed_position(connection)
        with self._lock:
            if self._mark is None:
                self._mark = position
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

    def ahead(self, rows: list[dict[str, Any]], then: Callable[[], object] | None = None) -> None:
        """Entries made from this process's own committed appends, before the table has them.

        Called in the appending thread (:class:`~projections.feed_ahead.FeedAhead`). They do not
        move the mark: the follower's batch or a read still brings the same entries, which the
        streams skip by number. ``then`` is called once the streams have taken them (in their
        event loop, after they sent them), or at once if no stream watches.
        """
        for row in rows:
            frame(row)  # rendered here, once, not in the streams' event loop
        with self._lock:
            for row in rows:
                if ends_feed(row["event"], row["data"]):
                    self._ended_ahead[row["run_id"]] = row["seq"]
                    while len(self._ended_ahead) > ENDED_AHEAD_KEPT:
                        self._ended_ahead.popitem(last=False)
            handed = self._hand_over(rows, then)
        if not handed and then is not None:
            then()

    def ended_ahead(self, run_id: str, after_seq: int) -> bool:
        """Whether the run's feed ended at or before entry ``after_seq`` by an entry made ahead.

        A stream sends an entry made ahead as soon as it is made, so a client may see a feed's
        last entry and resume after it before the table has that entry; the table alone would
        then call the feed open. This process made that ending, so it can tell.
        """
        with self._lock:
            last = self._ended_ahead.get(run_id)
        return last is not None and after_seq >= last

    def _run(self) -> None:
        while not self._stop.is_set():
            self.wake.wait(self.poll_interval)
            self.wake.clear()
            try:
                self._deliver()
            except SQLAlchemyError as error:
                if self._failing_since is None:
                    self._failing_since = time.monotonic()
                log.warning("feed: reading new entries failed (%s); retrying", first_line(error))
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
            if not self._subscriptions.keys() <= set(runs):
                # A stream of another run subscribed during the read: entries of its run
                # committed after its backlog read are not in these rows. Read again.
                self.wake.set()
                return
            self._mark = max(current, reached, *(row["position"] for row in rows))

    def _hand_over(
        self, rows: list[dict[str, Any]], then: Callable[[], object] | None = None
    ) -> bool:
        """Give each row to the streams watching its run: one call into each event loop.

        Under the lock; the rows are in log order. ``then`` runs in the last loop after its
        streams have had their turn; False (and ``then`` not called) when no stream watches.
        """
        batches: dict[asyncio.AbstractEventLoop, list[tuple[Subscription, dict[str, Any]]]] = {}
        for row in rows:
            for subscription in self._subscriptions.get(row["run_id"], ()):
                batches.setdefault(subscription.loop, []).append((subscription, row))
        for index, (loop, batch) in enumerate(batches.items(), start=1):
            try:
                loop.call_soon_threadsafe(_put_all, batch, then if index == len(batches) else None)
            except RuntimeError:  # the loop closed: its streams are gone
                if index == len(batches) and then is not None:
                    then()
        return bool(batches)


def _put_all(
    batch: list[tuple[Subscription, dict[str, Any]]], then: Callable[[], object] | None
) -> None:
    """In a stream's event loop: queue each row for its stream; ``then`` after they ran."""
    for subscription, row in batch:
        subscription.queue.put_nowait(row)
    if then is not None:  # scheduled after the streams just woken: they send first
        asyncio.get_running_loop().call_soon(then)
