"""The three writers: raw driver inserts, a bare eventsourcing Application, and our store."""

from __future__ import annotations

import sqlite3
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from uuid import UUID, uuid4

import psycopg
from psycopg import sql

from bench.append.workload import run_step, start_run
from bench.floor import BareBench, Widget
from domain.run import Run

if TYPE_CHECKING:
    from bootstrap.composition import Services

S = TypeVar("S")


class Writer(ABC, Generic[S]):
    """Makes streams, adds events to them, and saves the pending events of several at once."""

    @abstractmethod
    def start(self) -> S:
        """A new stream with its first event pending."""

    @abstractmethod
    def step(self, stream: S, index: int) -> None:
        """Add the stream's event number ``index`` (pending)."""

    @abstractmethod
    def save(self, streams: list[S]) -> None:
        """Append the pending events of all given streams in one transaction."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""


class ProjectWriter(Writer[Run]):
    """Real Run aggregates saved by ``HarnessStore.save_all`` of the composition root's store."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.store = services.store

    def start(self) -> Run:
        return start_run()

    def step(self, stream: Run, index: int) -> None:
        run_step(stream, index)

    def save(self, streams: list[Run]) -> None:
        self.store.save_all(*streams)

    def close(self) -> None:
        self.services.close()


class BareWriter(Writer[Widget]):
    """Widgets saved by a plain ``Application.save``."""

    def __init__(self, app: BareBench, payload: str) -> None:
        self.app = app
        self.payload = payload

    def start(self) -> Widget:
        return Widget.start(self.payload)

    def step(self, stream: Widget, index: int) -> None:
        stream.happen(self.payload)

    def save(self, streams: list[Widget]) -> None:
        self.app.save(*streams)

    def close(self) -> None:
        self.app.close()


@dataclass
class RawStream:
    """A stream for the raw writers: its id, next version and pending rows."""

    id: UUID = field(default_factory=uuid4)
    pending: list[tuple[Any, int, str, bytes]] = field(default_factory=list)


class RawWriter(Writer[RawStream], ABC):
    """Rows with the project's own topics and state bytes, cycled like a run's events."""

    def __init__(self, payloads: list[tuple[str, bytes]]) -> None:
        self.payloads = payloads

    def start(self) -> RawStream:
        stream = RawStream()
        self.step(stream, 0)
        return stream

    def step(self, stream: RawStream, index: int) -> None:
        topic, state = self.payloads[index % len(self.payloads)]
        stream.pending.append((self.originator_id(stream.id), index + 1, topic, state))

    def rows(self, streams: list[RawStream]) -> list[tuple[Any, int, str, bytes]]:
        """Take the pending rows of the given streams."""
        rows: list[tuple[Any, int, str, bytes]] = []
        for stream in streams:
            rows.extend(stream.pending)
            stream.pending.clear()
        return rows

    @staticmethod
    def originator_id(stream_id: UUID) -> Any:
        """The id as the driver stores it."""
        return stream_id


class RawSQLiteWriter(RawWriter):
    """``sqlite3`` in autocommit mode with explicit BEGIN/COMMIT, WAL, like eventsourcing."""

    def __init__(self, path: str, payloads: list[tuple[str, bytes]]) -> None:
        super().__init__(payloads)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS raw_events ("
            "id INTEGER PRIMARY KEY, originator_id TEXT, originator_version INTEGER, "
            "topic TEXT, state BLOB, UNIQUE (originator_id, originator_version))"
        )
        self.insert = (
            "INSERT INTO raw_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, ?, ?)"
        )

    @staticmethod
    def originator_id(stream_id: UUID) -> Any:
        return stream_id.hex

    def save(self, streams: list[RawStream]) -> None:
        rows = self.rows(streams)
        cursor = self.conn.cursor()
        cursor.execute("BEGIN")
        if len(rows) == 1:
            cursor.execute(self.insert, rows[0])
        else:
            cursor.executemany(self.insert, rows)
        cursor.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class RawPostgresWriter(RawWriter):
    """``psycopg`` 3, one connection, INSERT … RETURNING id in one transaction per save.

    No LOCK TABLE and no NOTIFY: this is the floor, not a copy of eventsourcing's recorder.
    """

    def __init__(self, conninfo: str, schema: str, payloads: list[tuple[str, bytes]]) -> None:
        super().__init__(payloads)
        self.conn = psycopg.connect(conninfo, autocommit=True)
        table = sql.Identifier(schema, "raw_events")
        self.conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} ("
                "originator_id uuid NOT NULL, originator_version bigint NOT NULL, "
                "topic text, state bytea, id bigserial UNIQUE, "
                "PRIMARY KEY (originator_id, originator_version))"
            ).format(table)
        )
        self.insert = sql.SQL(
            "INSERT INTO {} (originator_id, originator_version, topic, state) "
            "VALUES (%s, %s, %s, %s) RETURNING id"
        ).format(table)

    def save(self, streams: list[RawStream]) -> None:
        rows = self.rows(streams)
        with self.conn.transaction(), self.conn.cursor() as cursor:
            if len(rows) == 1:
                cursor.execute(self.insert, rows[0], prepare=True)
                cursor.fetchone()
            else:
                cursor.executemany(self.insert, rows, returning=True)
                while cursor.nextset():
                    pass

    def close(self) -> None:
        self.conn.close()
