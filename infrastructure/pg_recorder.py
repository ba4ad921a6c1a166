"""The eventsourcing PostgreSQL recorder: one round trip per append, failing fast when away.

An append is one statement, a server-side function that locks, inserts, notifies and commits
within that statement (:mod:`infrastructure.pg_append`); reads are the library's.

The library's recorder retries every read and write ten times on a connection error, sleeping
0.2 s in between, and each attempt may wait the whole pool timeout for a connection: with the
server down a request took 10-20 s to fail. Its pool also retries a lost connection with a
backoff that doubles without end, so after a long outage it could take as long again to
reconnect. Here:

- a call is tried once more only when its connection was lost (a restart or a dropped socket:
  no SQLSTATE, class 08 or 57P), after the pool has checked its idle connections, so one dead
  connection does not fail one request after another; a lock timeout or a constraint is never
  retried, and a pool timeout (no connection within the connect timeout) is not either;
- every connection attempt is bounded by the connect timeout, and the pool gives up re-making a
  lost connection after it, so the next request that needs one tries again at once instead of
  waiting out a long backoff.

So a request fails within about the connect timeout (``HARNESS_DB_CONNECT_TIMEOUT``, which is
also how long it waits for a pooled connection) and succeeds again as soon as the server does.
"""

from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg_pool
from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
)
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.utils import get_topic
from psycopg.sql import SQL

from domain.run import Run
from infrastructure.pg_append import AppendFunction, ended_payload

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from uuid import UUID

    from eventsourcing.persistence import Notification, StoredEvent
    from eventsourcing.postgres import PostgresDatastore

T = TypeVar("T")

TOPIC = f"{__name__}:FailFastRecorder"
"""The eventsourcing topic of the recorder (``APPLICATION_RECORDER_TOPIC``)."""

RUN_ENDED_TOPIC = get_topic(Run.RunTerminated)
"""The topic of a run's termination: an append holding one tells the ended channel the run's id
(:mod:`infrastructure.run_ends`), whichever process wrote it."""

_LOST_CONNECTION_STATES = ("08", "57P")
"""SQLSTATE prefixes of a lost connection: connection exceptions, and the server shutting down,
crashed or not yet accepting connections."""

_select_events = inspect.unwrap(PostgresApplicationRecorder.select_events)
_select_notifications = inspect.unwrap(PostgresApplicationRecorder.select_notifications)
_max_notification_id = inspect.unwrap(PostgresApplicationRecorder.max_notification_id)


def connection_lost(error: BaseException) -> bool:
    """Whether ``error`` (raised by the recorder) means the connection itself was lost."""
    cause = error.__cause__
    if isinstance(cause, psycopg_pool.PoolTimeout):
        return False  # no connection within the connect timeout: already waited long enough
    state = getattr(cause, "sqlstate", None)
    return state is None or str(state).startswith(_LOST_CONNECTION_STATES)


class FailFastRecorder(PostgresApplicationRecorder):
    """The PostgreSQL application recorder: one round trip per append, one retry if lost."""

    def __init__(
        self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events"
    ) -> None:
        """Bound every connection attempt of ``datastore``'s pool by its timeout."""
        super().__init__(datastore, events_table_name=events_table_name)
        pool = datastore.pool
        if isinstance(pool.kwargs, dict):
            pool.kwargs["connect_timeout"] = max(1, math.ceil(pool.timeout))
        pool.reconnect_timeout = pool.timeout
        self.append_function = AppendFunction(
            self.datastore.schema,
            self.events_table_name,
            self.stored_event_type_name,
            self.channel_name,
        )
        self.sql_create_statements.append(self.append_function.serialise_statement)
        self.sql_create_statements.append(self.append_function.drop_old_statement)
        self.sql_create_statements.append(self.append_function.create_statement)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Insert in one statement, its own transaction (one retry on a lost connection).

        A tracking record (``kwargs["tracking"]``, the library's process applications) is
        refused: this store's projections track their positions in their own tables, and the
        append function writes events only.

        A connection can be lost after the server committed but before it said so; the retry
        then conflicts with our own events. Those are recognised by their exact stored bytes
        (each carries its chain link, which no other writer's event has), and the insert counts
        as done: a false conflict would start a run twice or end a live run as if cancelled.
        """
        if kwargs.get("tracking") is not None:
            raise ProgrammingError("this recorder does not write tracking records")
        try:
            ids: Sequence[int] | None = self._append(stored_events)
        except (InterfaceError, OperationalError) as error:
            if not connection_lost(error):
                raise
        else:
            return ids
        self.datastore.pool.check()
        try:
            retried: Sequence[int] | None = self._append(stored_events)
        except IntegrityError:
            landed = self.landed(stored_events)
            if landed is None:
                raise
            return landed
        return retried

    def _append(self, stored_events: Sequence[StoredEvent]) -> list[int] | None:
        """One statement on an autocommit connection: lock, insert, notify, commit (see above)."""
        if not stored_events:
            return None
        ended = ended_payload(
            str(e.originator_id) for e in stored_events if e.topic == RUN_ENDED_TOPIC
        )
        with self.datastore.get_connection() as connection:
            return self.append_function.append(
                connection, stored_events, self.datastore.lock_timeout, ended
            )

    def landed(self, stored_events: Sequence[StoredEvent]) -> list[int] | None:
        """The log positions of ``stored_events`` if exactly these are stored, else None."""
        statement = self.select_events_statement + SQL(" AND originator_version = %s")
        positions: list[int] = []
        with self.datastore.get_connection() as connection, connection.cursor() as cursor:
            for event in stored_events:
                cursor.execute(statement, (event.originator_id, event.originator_version))
                row = cursor.fetchone()
                if row is None or bytes(row["state"]) != event.state or row["topic"] != event.topic:
                    return None
                positions.append(int(row["notification_id"]))
        return positions

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """One stream's events (see the module: one retry on a lost connection)."""
        result: Sequence[StoredEvent] = self._once_more(
            lambda: _select_events(self, originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
        )
        return result

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """A page of the log (see the module: one retry on a lost connection)."""
        result: Sequence[Notification] = self._once_more(
            lambda: _select_notifications(
                self, start, limit, stop, topics, inclusive_of_start=inclusive_of_start
            )
        )
        return result

    def max_notification_id(self) -> int | None:
        """The log's last position (see the module: one retry on a lost connection)."""
        result: int | None = self._once_more(lambda: _max_notification_id(self))
        return result

    def _once_more(self, call: Callable[[], T]) -> T:
        """``call()``; after a lost connection, check the pool's idle ones and call once more."""
        try:
            return call()
        except (InterfaceError, OperationalError) as error:
            if not connection_lost(error):
                raise
        # A restart cuts every pooled connection at once: find them all now rather than
        # failing one request per dead connection.
        self.datastore.pool.check()
        return call()
