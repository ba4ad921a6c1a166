"""Keeps the projections following the log: two followers, each in a supervised thread.

They wake when this process appends (the store's listeners), when an optional wake-up source
says the log grew (on PostgreSQL, a LISTEN connection the composition root plugs in), and
otherwise poll, which covers writers in other processes and lost notifications.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import TYPE_CHECKING, Protocol

from eventsourcing.persistence import PersistenceError
from sqlalchemy.exc import SQLAlchemyError

from infrastructure.database import brief
from projections.base import UnreadableLogEntry
from projections.local_log import LocalLog
from projections.runner import Projector, all_projections
from projections.sse_feed import SseFeed

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from application.view_port import Row
    from projections.base import Committed

log = logging.getLogger(__name__)

FEED = SseFeed.name
POLL_INTERVAL = 1.0
"""Seconds between polls of the log when no wake-up came (a lost NOTIFY, another process)."""
RETRY_AFTER = 1.0
"""Seconds before a follower retries after the database failed (or an unreadable entry)."""


class WakeSource(Protocol):
    """Calls the ``wake`` it was made with whenever the log may have grown, until ``stop``."""

    def run(self) -> None:
        """Watch until the ``stop`` event it was made with is set."""
        ...

    def interrupt(self) -> None:
        """Set ``stop`` and make :meth:`run` return now rather than at its next look."""
        ...


class LiveProjections:
    """The projections following the log in background threads, with their wake-up source.

    Two followers, each in a thread of its own: the SSE feed, and every other read table. The
    feed never waits behind the others' batch (a stream's next event is the latency that
    clients see); the others catch up in their own time. Both are applied exactly once through
    the same tracking rows as any other runner, so a rebuild gives the same rows.
    """

    def __init__(
        self,
        store: HarnessStore,
        engine: Engine,
        *,
        poll_interval: float = POLL_INTERVAL,
        batch_size: int | None = None,
        notify_channel: str | None = None,
        wake_source: Callable[[Callable[[], object], threading.Event], WakeSource] | None = None,
    ) -> None:
        """Follow ``store``'s log into ``engine``'s read tables.

        Args:
            store: The event store whose log is followed.
            engine: Where the read tables are.
            poll_interval: Seconds between polls when nothing wakes the followers.
            batch_size: Events per batch (None: the runner's default).
            notify_channel: A channel the feed follower NOTIFYs after every batch (PostgreSQL).
            wake_source: Makes a wake-up source from the followers' ``wake`` and ``stop``.
        """
        self.projector = Projector(store, engine, batch_size=batch_size)
        """Every projection: positions, status, waits and rebuilds (it does not follow)."""
        self.local, self.feed, self.rest = _followers(store, engine, batch_size, notify_channel)
        for follower in (self.feed, self.rest):
            follower.listeners.append(partial(self._advanced, follower.names))
        self.feed.listeners.append(self._feed_committed)
        self.ahead: Callable[[Sequence[object], Callable[[], object]], None] | None = None
        """Given this process's appends and the feed follower's wake-up, which it calls."""
        self.published: list[Callable[[int, int, list[Row]], None]] = []
        """Called after every committed feed batch (in the feed follower's thread) with the
        log positions it covered, ``(after, last]``, and the feed entries it wrote."""
        self.poll_interval = poll_interval
        self.stop_event = threading.Event()
        self.wakes = (threading.Event(), threading.Event())
        self.listener: WakeSource | None = None
        if wake_source is not None:
            self.listener = wake_source(self.wake, self.stop_event)
        store.listeners.append(self._appended)  # this process's own writes
        self._store = store
        self._threads: list[threading.Thread] = []

    def wake(self) -> None:
        """Make both followers look at the log now."""
        for event in self.wakes:
            event.set()

    def _appended(self, events: Sequence[object]) -> None:
        """This process appended: :attr:`ahead` hands the entries to streams, then wakes the feed.

        It calls the wake-up once the streams have had them (they get the interpreter first),
        or at once.
        """
        wake = self.wakes[0].set  # the feed first: the rest is woken by the feed's commit
        if self.ahead is None:
            wake()
            return
        try:
            self.ahead(events, wake)
        except BaseException:
            wake()
            raise

    def _advanced(self, names: Sequence[str], batch: Committed) -> None:
        """A follower of ``names`` committed a batch: tell :attr:`projector`'s own."""
        self.projector.reach.note(names, batch.last)
        for listener in self.projector.listeners:
            listener(batch)

    def _feed_committed(self, batch: Committed) -> None:
        entries = batch.entries(FEED)
        for publish in self.published:
            publish(batch.after, batch.last, entries)
        self.wakes[1].set()

    def start(self) -> LiveProjections:
        """Start following (the tables and tracking rows are created if missing)."""
        self.projector.ensure_tracking()
        targets: list[tuple[str, Callable[[], None]]] = [
            (name, partial(follow, follower, self.stop_event, wake, self.poll_interval))
            for name, follower, wake in zip(
                ("harness-projections-feed", "harness-projections"),
                (self.feed, self.rest),
                self.wakes,
                strict=True,
            )
        ]
        if self.listener is not None:
            targets.append(("harness-projections-listen", self.listener.run))
        for name, target in targets:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def close(self, timeout: float = 10.0) -> None:
        """Stop following and wait for the threads."""
        self.stop_event.set()
        self.wake()
        if self.listener is not None:
            self.listener.interrupt()
        if self._appended in self._store.listeners:
            self._store.listeners.remove(self._appended)
        if self.local.recorded in self._store.recorded:
            self._store.recorded.remove(self.local.recorded)
        for thread in self._threads:
            thread.join(timeout)


def _followers(
    store: HarnessStore,
    engine: Engine,
    batch_size: int | None,
    notify_channel: str | None,
) -> tuple[LocalLog, Projector, Projector]:
    """This process's appends, the feed's follower (it NOTIFYs ``notify_channel``), the rest's.

    The followers take this process's appends as events from the :class:`LocalLog`, which
    hears of them before the store's listeners (which wake the followers) do.
    """
    local = LocalLog()
    store.recorded.append(local.recorded)
    feed = Projector(
        store, engine, [SseFeed()], batch_size, notify_channel=notify_channel, local=local
    )
    rest = [p for p in all_projections() if p.name != FEED]
    return local, feed, Projector(store, engine, rest, batch_size=batch_size, local=local)


def follow(
    projector: Projector,
    stop: threading.Event,
    wake: threading.Event,
    poll_interval: float = POLL_INTERVAL,
) -> None:
    """Catch ``projector`` up, then again on every wake-up or poll tick, until ``stop`` is set.

    Set ``wake`` after ``stop`` to end the wait at once.

    The positions are carried from one wake-up to the next (read again after a lost race,
    which is how a rebuild or another runner is noticed). A database failure (or an entry that
    is not an event) is logged and retried after :data:`RETRY_AFTER` from the positions in the
    database, so nothing is lost or applied twice across a failure.
    """
    positions: dict[str, int] | None = None
    said = ""  # an entry that is not an event is said once, then retried quietly
    while not stop.is_set():
        wake.clear()
        try:
            positions = projector.catch_up_from(positions, stop=stop)[1]
        except (SQLAlchemyError, PersistenceError, OSError, UnreadableLogEntry) as error:
            if not isinstance(error, UnreadableLogEntry):
                log.warning("projections: %s; retrying in %.1fs", brief(error), RETRY_AFTER)
            elif str(error) != said:
                log.error("projections: %s", said := str(error))
            positions = None
            stop.wait(RETRY_AFTER)
            continue
        except Exception:  # supervised: a bug is logged loudly, the follower keeps trying
            log.exception("projections: a batch failed; retrying in %.1fs", RETRY_AFTER)
            positions = None
            stop.wait(RETRY_AFTER)
            continue
        wake.wait(poll_interval)
