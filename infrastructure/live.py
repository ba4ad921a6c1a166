"""Keeps the projections following the log: wake-ups, polling and a supervised thread.

On PostgreSQL a dedicated connection LISTENs on the event table's channel (eventsourcing NOTIFYs
it in every write transaction) and wakes the projector; it is only a latency hint, so the
projector also polls, and a lost LISTEN connection is reopened by itself. On SQLite the store's
in-process listeners wake it, and polling covers writers in other processes.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from projections.runner import POLL_INTERVAL, Projector

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from infrastructure.settings import Settings

log = logging.getLogger(__name__)

LISTEN_APPLICATION_NAME = "harness-projections-listen"
"""``application_name`` of the LISTEN connection (find it in ``pg_stat_activity``)."""
RECONNECT_AFTER = 0.5
FEED = "sse_feed"


def read_channel(settings: Settings) -> str:
    """The PostgreSQL channel a projector NOTIFYs after every batch (per schema)."""
    return f"harness_read_{settings.database_schema}"[:63]


class PgNotifyWake:
    """Sets ``wake`` on every NOTIFY of the event table's channel; reconnects when cut off."""

    def __init__(
        self,
        settings: Settings,
        channel: str,
        wake: threading.Event,
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
        """Listen until ``stop``; every (re)connection also wakes the projector once."""
        while not self.stop.is_set():
            try:
                self._listen()
            except psycopg.Error as error:
                self.listening.clear()
                log.warning("projections: LISTEN connection lost (%s); reconnecting", error)
                self.wake.set()  # poll now: notifications may have been missed meanwhile
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
            self.wake.set()
            while not self.stop.is_set():
                for _ in connection.notifies(timeout=POLL_INTERVAL):
                    self.wake.set()


class LiveProjections:
    """A projector following the log in a background thread, with its wake-up source."""

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
        self.projector = Projector(
            store,
            engine,
            batch_size=batch_size,
            notify_channel=read_channel(settings) if postgres else None,
            first=(FEED,),  # a stream's next event need not wait for the other read tables
        )
        self.poll_interval = poll_interval
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self.listener: PgNotifyWake | None = None
        if settings.database.kind == "postgres":
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

    def _appended(self, _events: Sequence[object]) -> None:
        self.wake.set()

    def start(self) -> LiveProjections:
        """Start following (the tables and tracking rows are created if missing)."""
        self.projector.ensure_tracking()
        targets = [self._follow]
        if self.listener is not None:
            targets.append(self.listener.run)
        for target in targets:
            thread = threading.Thread(target=target, name="harness-projections", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _follow(self) -> None:
        self.projector.follow(self.stop_event, self.wake, self.poll_interval)

    def close(self, timeout: float = 10.0) -> None:
        """Stop following and wait for the threads."""
        self.stop_event.set()
        self.wake.set()
        if self._appended in self._store.listeners:
            self._store.listeners.remove(self._appended)
        for thread in self._threads:
            thread.join(timeout)
