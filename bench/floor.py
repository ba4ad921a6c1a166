"""What both benchmarks share: the bare eventsourcing floor and the local PostgreSQL helpers."""

from __future__ import annotations

from uuid import UUID, uuid4

import psycopg
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate
from psycopg import sql

PG_HOST = "127.0.0.1"
PG_PORT = 5432
PG_USER = "postgres"
PG_DBNAME = "harness_bench"
LOCK_TIMEOUT = "5"


class Widget(Aggregate):
    """A minimal aggregate with one event type carrying an opaque payload."""

    class Started(Aggregate.Created):
        """Created with a payload."""

        data: str

    class Happened(Aggregate.Event):
        """Something happened, with a payload."""

        data: str

        def apply(self, aggregate: Widget) -> None:
            """Count it."""
            aggregate.count += 1

    def __init__(self) -> None:
        self.count = 0

    @classmethod
    def start(cls, data: str) -> Widget:
        """A new widget (``Started`` pending)."""
        return cls._create(cls.Started, id=uuid4(), data=data)

    def happen(self, data: str) -> None:
        """Record one event."""
        self.trigger_event(self.Happened, data=data)


class BareBench(Application[UUID]):
    """A plain Application: no custom transcodings, mapper or environment handling."""


def pg_conninfo(dbname: str) -> str:
    """A libpq connection string for the local server."""
    return f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={dbname}"


def ensure_database() -> None:
    """Create the benchmark database if it is missing."""
    with psycopg.connect(pg_conninfo("postgres"), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DBNAME,))
        if found.fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(PG_DBNAME)))
