"""The sample operations data set: its SQL tables, loading, and the planted incidents.

The data (``infrastructure/sample/ops_sample.json``) is four services over three days with four
planted incidents of different causes; its ``window`` is the span the records cover, its ``now``
the moment the sample is read as of (the default reference clock), and its ``incidents`` list is
the ground truth the offline model and the tests use. Timestamps are stored as UTC on both
backends (naive UTC text on SQLite, ``timestamptz`` on PostgreSQL) and always come back
timezone-aware.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Column,
    DateTime,
    Dialect,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.types import TypeDecorator

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

SAMPLE_RESOURCE = "sample/ops_sample.json"


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend; naive values are refused."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Store UTC; SQLite keeps naive UTC text, whose fixed format sorts chronologically."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(
                f"timestamp {value.isoformat()} has no timezone: pass an aware UTC time"
            )
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Read back as aware UTC."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


ops_metadata = MetaData()

ops_logs = Table(
    "ops_logs",
    ops_metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("ts", UtcDateTime, nullable=False),
    Column("service", String(64), nullable=False),
    Column("level", String(8), nullable=False),
    Column("message", Text, nullable=False),
    Index("ix_ops_logs_service_ts", "service", "ts"),
)
ops_metrics = Table(
    "ops_metrics",
    ops_metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("ts", UtcDateTime, nullable=False),
    Column("service", String(64), nullable=False),
    Column("name", String(64), nullable=False),
    Column("value", Float, nullable=False),
    Index("ix_ops_metrics_service_name_ts", "service", "name", "ts"),
)
ops_deployments = Table(
    "ops_deployments",
    ops_metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("ts", UtcDateTime, nullable=False),
    Column("service", String(64), nullable=False),
    Column("version", String(64), nullable=False),
    Column("author", String(64), nullable=False),
    Column("summary", Text, nullable=False),
    Index("ix_ops_deployments_service_ts", "service", "ts"),
)
ops_alerts = Table(
    "ops_alerts",
    ops_metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("ts", UtcDateTime, nullable=False),
    Column("service", String(64), nullable=False),
    Column("name", String(128), nullable=False),
    Column("severity", String(16), nullable=False),
    Column("summary", Text, nullable=False),
    Index("ix_ops_alerts_service_ts", "service", "ts"),
)

_SAMPLE_KINDS: tuple[tuple[str, Table], ...] = (
    ("logs", ops_logs),
    ("metrics", ops_metrics),
    ("deployments", ops_deployments),
    ("alerts", ops_alerts),
)


def create_ops_tables(engine: Engine) -> None:
    """Create the four ops tables and their indexes if missing (PostgreSQL: the schema exists)."""
    ops_metadata.create_all(engine, checkfirst=True)


def load_sample(engine: Engine) -> dict[str, int]:
    """Create the tables if needed and upsert the sample rows; returns each table's row count.

    Rows have stable ids (their position in the sample), so loading again leaves exactly the same
    rows, and a newer sample overwrites the older rows in place.
    """
    create_ops_tables(engine)
    document = _sample_document()
    with engine.begin() as connection:
        for kind, table in _SAMPLE_KINDS:
            rows = [_row(index, record) for index, record in enumerate(document[kind], 1)]
            connection.execute(_upsert(engine.dialect.name, table), rows)
        return {
            table.name: int(connection.scalar(select(func.count()).select_from(table)) or 0)
            for _, table in _SAMPLE_KINDS
        }


def _row(index: int, record: Mapping[str, Any]) -> dict[str, Any]:
    """A sample record as a row: JSON keys are column names, except ``timestamp`` is ``ts``."""
    values = {key: value for key, value in record.items() if key != "timestamp"}
    return {"id": index, "ts": parse_utc(str(record["timestamp"])), **values}


def _upsert(dialect: str, table: Table) -> Any:
    """``INSERT … ON CONFLICT (id) DO UPDATE`` for the engine's dialect."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(table)
    changed = {column.name: statement.excluded[column.name] for column in table.columns}
    return statement.on_conflict_do_update(index_elements=["id"], set_=changed)


def parse_utc(text: str) -> datetime:
    """Parse an ISO 8601 time from the sample (``…Z`` or with an offset) as aware UTC."""
    return datetime.fromisoformat(text).astimezone(UTC)


# -- ground truth -----------------------------------------------------------------------------


@dataclass(frozen=True)
class IncidentProbe:
    """A tool call that surfaces one piece of an incident's evidence.

    ``expect`` is a phrase that occurs in one of the output lines, or ``None`` when the scope is
    planted empty (for example: no deployment before a non-deploy incident).
    """

    tool: str
    arguments: Mapping[str, str]
    expect: str | None


@dataclass(frozen=True)
class SampleIncident:
    """One incident planted in the sample data, with the evidence that proves its cause."""

    id: str
    service: str
    start: datetime
    end: datetime
    cause: str
    title: str
    question: str
    summary: str
    evidence: tuple[str, ...]
    probes: tuple[IncidentProbe, ...]


def sample_incidents() -> list[SampleIncident]:
    """The planted incidents in time order of the sample file."""
    return [_incident(item) for item in _sample_document()["incidents"]]


def sample_services() -> tuple[str, ...]:
    """The services the sample covers."""
    return tuple(str(name) for name in _sample_document()["services"])


def sample_window() -> tuple[datetime, datetime]:
    """The span the sample's records cover, ``[start, end)`` in UTC."""
    window: Any = _sample_document()["window"]
    return parse_utc(str(window["start"])), parse_utc(str(window["end"]))


def sample_now() -> datetime:
    """The sample data's own "now": the reference clock ``HARNESS_REFERENCE_TIME=sample`` reads.

    Relative times ("yesterday", "right now") in questions about the sample are resolved
    against it, so they mean the same days whenever the sample is asked about.
    """
    return parse_utc(str(_sample_document()["now"]))


def _incident(item: Mapping[str, Any]) -> SampleIncident:
    return SampleIncident(
        id=str(item["id"]),
        service=str(item["service"]),
        start=parse_utc(str(item["start"])),
        end=parse_utc(str(item["end"])),
        cause=str(item["cause"]),
        title=str(item["title"]),
        question=str(item["question"]),
        summary=str(item["summary"]),
        evidence=tuple(str(phrase) for phrase in item["evidence"]),
        probes=tuple(_probe(probe) for probe in item["probes"]),
    )


def _probe(item: Mapping[str, Any]) -> IncidentProbe:
    arguments: Mapping[str, Any] = item["arguments"]
    expect = item["expect"]
    return IncidentProbe(
        tool=str(item["tool"]),
        arguments={str(key): str(value) for key, value in arguments.items()},
        expect=None if expect is None else str(expect),
    )


@cache
def _sample_document() -> Mapping[str, Sequence[Any]]:
    text = resources.files("infrastructure").joinpath(SAMPLE_RESOURCE).read_text(encoding="utf-8")
    document: Mapping[str, Sequence[Any]] = json.loads(text)
    return document
