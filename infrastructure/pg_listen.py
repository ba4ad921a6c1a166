"""PostgreSQL LISTEN as a wake-up source: a dedicated connection that calls back on every NOTIFY.

eventsourcing NOTIFYs the event table's channel in every write transaction, and a projector
NOTIFYs its read channel after every batch. A notification is only a latency hint (whoever
listens also polls), and a lost LISTEN connection is reopened by itself.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from infrastructure.settings import Settings

log = logging.getLogger(__name__)

LISTEN_APPLICATION_NAME = "harness-projections-listen"
"""``application_name`` of the LISTEN connection (find it in ``pg_stat_activity``)."""
RECONNECT_AFTER = 0.5
CHECK_STOP_EVERY = 1.0
"""Seconds a quiet LISTEN connection waits before it looks at ``stop`` again."""
KEEPALIVE: Mapping[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 11_000,
}
"""TCP liveness of a LISTEN connection: one the network dropped without a word (a NAT, a load
balancer) is found dead within about 11 s and opened again, instead of after the system's two
hours, during which nothing would be heard (a run would take its end from memory)."""
MAX_CHANNEL_BYTES = 63
"""PostgreSQL's longest channel name, in bytes (``NAMEDATALEN`` - 1)."""


def channel_name(name: str) -> str:
    """``name`` cut to PostgreSQL's channel limit: 63 bytes, at a character's boundary.

    ``pg_notify`` refuses a longer name ("channel name too long") where ``LISTEN`` cuts it: a
    name cut at 63 *characters* still failed every NOTIFY when a schema's name held multibyte
    characters (an ``é`` is 2 bytes), which on the ended channel failed every run's end.
    """
    return name.encode()[:MAX_CHANNEL_BYTES].decode(errors="ignore")


def read_channel(settings: Settings) -> str:
    """The PostgreSQL channel a projector NOTIFYs after every batch (per schema)."""
    return channel_name(f"harness_read_{settings.database_schema}")


class PgNotifyWake:
    """Calls ``wake`` on every NOTIFY of a channel; reconnects when cut off."""

    def __init__(
        self,
        settings: Settings,
        channel: str,
        wake: Callable[[], object],
        stop: threading.Event,
        application_name: str = LISTEN_APPLICATION_NAME,
        heard: Callable[[str], object] | None = None,
    ) -> None:
        """Listen with ``settings``' database on ``channel``; ``heard`` gets each payload."""
        self.application_name = application_name
        self.heard = heard
        self.settings = settings
        self.channel = channel
        self.wake = wake
        self.stop = stop
        self.connections = 0
        """How many LISTEN connections were opened (more than one: it reconnected)."""
        self.listening = threading.Event()
        self.backend_pid: int | None = None
        """The server process of the current LISTEN connection (``pg_terminate_backend``)."""

    def run(self) -> None:
        """Listen until ``stop``; every (re)connection also wakes once."""
        try:
            while not self.stop.is_set():
                try:
                    self._listen()
                except psycopg.Error as error:
                    self.listening.clear()
                    log.warning(
                        "%s: LISTEN connection lost (%s); reconnecting",
                        self.application_name,
                        error,
                    )
                    self.wake()  # poll now: notifications may have been missed meanwhile
                    self.stop.wait(RECONNECT_AFTER)
        finally:
            self.listening.clear()  # stopped, or failed unexpectedly: hearing nothing now

    def interrupt(self) -> None:
        """Set ``stop`` and wake the LISTEN connection now with an empty NOTIFY of its channel.

        Without it the thread notices ``stop`` at its next look (:data:`CHECK_STOP_EVERY`), which
        made every close wait up to that long. Best effort: a server that is away changes nothing.
        """
        self.stop.set()
        if not self.listening.is_set():
            return
        try:
            with self.connect(f"{self.application_name}-stop") as connection:
                connection.execute("SELECT pg_notify(%s, '')", (self.channel,))
        except psycopg.Error as error:
            log.info("%s: could not wake the listener to stop (%s)", self.application_name, error)

    def connect(self, application_name: str) -> psycopg.Connection[tuple[object, ...]]:
        """A connection as the listener opens them (autocommit, with :data:`KEEPALIVE`)."""
        target = self.settings.database
        return psycopg.connect(
            host=target.host,
            port=target.port,
            user=target.user,
            password=target.password or None,
            dbname=target.dbname,
            autocommit=True,
            connect_timeout=self.settings.db_connect_timeout,
            application_name=application_name,
            **KEEPALIVE,
        )

    def _listen(self) -> None:
        with self.connect(self.application_name) as connection:
            connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            self.backend_pid = connection.info.backend_pid
            self.connections += 1
            self.listening.set()
            self.wake()
            while not self.stop.is_set():
                for notification in connection.notifies(timeout=CHECK_STOP_EVERY):
                    if self.stop.is_set():
                        break  # woken to stop (a NOTIFY of the closer's own, say)
                    if self.heard is not None:
                        self.heard(notification.payload)
                    self.wake()
