"""Keeps the projections following the log: wake-ups, polling and a supervised thread.

On PostgreSQL a dedicated connection LISTENs on the event table's channel (eventsourcing NOTIFYs
it in every write transaction) and wakes the projector; it is only a latency hint, so the
projector also polls, and a lost LISTEN connection is reopened by itself. On SQLite the store's
in-process listeners wake it, and polling covers writers in other processes.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from projections.runner import POLL_INTERVAL, Projector, all_projections
from projections.sse_feed import SseFeed

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from infrastructure.settings import Settings
    from projections.base import Row

log = logging.getLogger(__name__)

LISTEN_APPLICATION_NAME = "harness-projections-listen"
"""``application_name`` of the LISTEN connection (find it in ``pg_stat_activity``)."""
RECONNECT_AFTER = 0.5
FEED = SseFeed.name


def read_channel(settings: Settings) -> str:
    """The PostgreSQL channel a projector NOTIFYs after every batch (per schema)."""
    return f"harness_read_{settings.database_schema}"[:63]


class PgNotifyWake:
    """Calls ``wake`` on every NOTIFY of a channel; reconnects when cut off."""

    def __init__(
        self,
        settings: Settings,
        channel: str,
        wake: Callable[[], object],
        stop: threading.Event,
        application_name: str = LISTEN_APPLICATION_NAME,
    ) -> None:
        """Listen with ``settings``' database on ``channel``."""
        self.application_name = application_name
        self.settings = settings
        self.channel = channel
        self.wake = wake
        self.stop = stop
        self.connections = 0
        """How many LISTEN connections were opened (more than one: it reconnected)."""
        self.listening = threading.Event()

    def run(self) -> None:
        """Listen until ``stop``; every (re)connection also wakes once."""
        while not self.stop.is_set():
            try:
                self._listen()
            except psycopg.Error as error:
                self.listening.clear()
                log.warning("projections: LISTEN connection lost (%s); reconnecting", error)
                self.wake()  # poll now: notifications may have been missed meanwhile
                self.stop.wait(RECONNECT_AFTER)

    def _listen(self) -> None:
        target = self.settings.database
        with psycopg.connect(
            host=target.host,
            port=target.port,
            user=target.user,
            password=target.password or None,
            dbname=target.dbname,
            autocommit=True,
            connect_timeout=self.settings.db_connect_timeout,
            application_name=self.application_name,
        ) as connection:
            connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            self.connections += 1
            self.listening.set()
            self.wake()
            while not self.stop.is_set():
                for _ in connection.notifies(timeout=POLL_INTERVAL):
                    self.wake()


class LiveProjections:
    """The projections following the log in background threads, with their wake-up source.

    Two followers, each in a thread of its own: the SSE feed, and every other read table. The
    feed never waits behind the others' batch (a stream's next event is the latency that
    clients see); the others catch up in their own time. Both are applied exactly once through
    the same tracking rows as any other runner, so a rebuild gives the same rows.
    """

    def __init__(
        self,
        settings: Settings,
        store: HarnessStore,
        engine: Engine,
        *,
        poll_interval: float = POLL_INTERVAL,
        batch_size: int | None = None,
    ) -> None:
        """Follow ``store``'s log into ``engine``'s read tables."""
        postgres = settings.database.kind == "postgres"
        self.projector = Projector(store, engine, batch_size=batch_size)
        """Every projection: positions, status, waits and rebuilds (it does not follow)."""
        self.sse = SseFeed()
        self.feed = Projector(
            store,
            engine,
            [self.sse],
            batch_size=batch_size,
            notify_channel=read_channel(settings) if postgres else None,
        )
        """Follows the SSE feed."""
        rest = [p for p in all_projections() if p.name != FEED]
        self.rest = Projector(store, engine, rest, batch_size=batch_size)
        """Follows every other read table."""
        for follower in (self.feed, self.rest):
            follower.listeners.append(self._advanced)
        self.feed.listeners.append(self._feed_committed)
        self.published: list[Callable[[int, int, list[Row]], None]] = []
        """Called after every committed feed batch (in the feed follower's thread) with the
        log positions it covered, ``(after, last]``, and the feed entries it wrote."""
        self.poll_interval = poll_interval
        self.stop_event = threading.Event()
        self.wakes = (threading.Event(), threading.Event())
        self.listener: PgNotifyWake | None = None
        if postgres:
            channel = str(getattr(store.recorder, "channel_name", ""))
            self.listener = PgNotifyWake(settings, channel, self.wake, self.stop_event)
        store.listeners.append(self._appended)  # this process's own writes
        self._store = store
        self._threads: list[threading.Thread] = []

    @classmethod
    def configured(cls, settings: Settings, store: HarnessStore, engine: Engine) -> LiveProjections:
        """Following with the configured poll interval and batch size."""
        return cls(
            settings,
            store,
            engine,
            poll_interval=settings.projection_poll,
            batch_size=settings.projection_batch,
        )

    def wake(self) -> None:
        """Make both followers look at the log now."""
        for event in self.wakes:
            event.set()

    def _appended(self, _events: Sequence[object]) -> None:
        self.wake()

    def _advanced(self, after: int, last: int) -> None:
        """A follower committed a batch: wake :attr:`projector`'s waiters and tell its listeners."""
        with self.projector.advanced:
            self.projector.advanced.notify_all()
        for listener in self.projector.listeners:
            listener(after, last)

    def _feed_committed(self, after: int, last: int) -> None:
        # The entries the batch wrote (an earlier batch's, rolled back, fall outside the range).
        written = [row for row in self.sse.written if after < row["position"] <= last]
        self.sse.written = []
        for publish in self.published:
            publish(after, last, written)

    def start(self) -> LiveProjections:
        """Start following (the tables and tracking rows are created if missing)."""
        self.projector.ensure_tracking()
        targets: list[tuple[str, Callable[[], None]]] = [
            (name, partial(follower.follow, self.stop_event, wake, self.poll_interval))
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
        if self._appended in self._store.listeners:
            self._store.listeners.remove(self._appended)
        for thread in self._threads:
            thread.join(timeout)
