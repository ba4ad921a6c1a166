"""The read side's SQL tables (SQLAlchemy Core), created by ``harness db init``.

Every table here is a projection of the event log: it can be dropped and rebuilt from position 0.
What the rows mean is the projections' business (``projections/``, which name tables and
columns only); their definition and storage is infrastructure's (see ``application.view_port``).
``projection_tracking`` holds, per projection, the last log position applied; a projection
commits its rows and its tracking row in one transaction (exactly-once). The evaluations' tables
are defined in ``infrastructure.eval_tables``, on the same ``MetaData`` (re-exported here).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    inspect,
    select,
    text,
)

from infrastructure import analytics_tables as analytics_tables  # defines its tables here
from infrastructure.analytics_views import create_views, drop_views, views_text
from infrastructure.eval_tables import eval_case as eval_case
from infrastructure.eval_tables import eval_run as eval_run
from infrastructure.read_metadata import metadata as metadata

if TYPE_CHECKING:
    from sqlalchemy import Engine

projection_tracking = Table(
    "projection_tracking",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("position", BigInteger, nullable=False),
)

diagnosis_run = Table(
    "diagnosis_run",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("session_id", String(200), nullable=False),
    Column("owner", String(200), nullable=False),
    Column("query", Text, nullable=False),
    Column("intent", String(32)),
    Column("status", String(16), nullable=False),
    Column("application_status", String(32)),
    Column("release_outcome", String(16)),
    Column("fallback_type", String(40)),
    Column("termination_state", String(24)),
    Column("termination_reason", String(40)),
    Column("stop_reason", String(40)),
    Column("safe_answer", JSON(none_as_null=True)),
    Column("conclusion", Text),
    Column("published_result", JSON(none_as_null=True)),
    Column("release_content", JSON(none_as_null=True)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("deadline", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("duration_ms", Integer),
    Column("tokens_in", Integer, nullable=False),
    Column("tokens_out", Integer, nullable=False),
    Column("model_calls", Integer, nullable=False),
    Column("agent_steps", Integer, nullable=False),
    Column("tool_calls", Integer, nullable=False),
    Column("rejected_tool_requests", Integer, nullable=False),
    Column("collection_id", String(36), index=True),
    Column("last_position", BigInteger, nullable=False),
)
LISTED_BY = ("owner", "session_id", "status", "intent", "release_outcome", "termination_state")
"""The listing's filters that have an index of their own, in the listing's order."""


def _listing_indexes() -> None:
    """Index the run listing's order (newest first, then id), alone and after each filter.

    A page, filtered or not, is then the next ``limit`` entries of one index from where the
    last page ended: no sort of every matching row, no rows skipped one by one.
    """
    newest = (diagnosis_run.c.created_at.desc(), diagnosis_run.c.run_id)
    Index("ix_diagnosis_run_listed", *newest)
    for name in LISTED_BY:
        Index(f"ix_diagnosis_run_{name}_listed", diagnosis_run.c[name], *newest)


_listing_indexes()


def _daily_key() -> list[Column[str]]:
    """The analytics key: UTC day × intent × release outcome × fallback type × termination state."""
    return [
        Column("day", String(10), primary_key=True),
        Column("intent", String(32), primary_key=True),
        Column("release_outcome", String(16), primary_key=True),
        Column("fallback_type", String(40), primary_key=True),
        Column("termination_state", String(24), primary_key=True),
    ]


run_daily = Table(
    "run_daily",
    metadata,
    *_daily_key(),
    Column("runs", Integer, nullable=False),
    Column("duration_p50_ms", Float, nullable=False),
    Column("duration_p95_ms", Float, nullable=False),
    Column("tokens_in", BigInteger, nullable=False),
    Column("tokens_out", BigInteger, nullable=False),
    Column("duration_p50_at", String(36)),
    Column("duration_p95_at", String(36)),
)
"""Finished runs per UTC day and outcome; '' stands for "none" in the key columns. The ``_at``
columns name the run at each percentile's rank (``projections.daily_stats``)."""

run_duration = Table(
    "run_duration",
    metadata,
    *_daily_key(),
    Column("duration_ms", Integer, primary_key=True, autoincrement=False),
    Column("run_id", String(36), primary_key=True),
    sqlite_with_rowid=False,
)
"""Every finished run's duration under its ``run_daily`` key, in key, duration and run order: a
group's percentiles are walked to their ranks along this index; a day's runs are never read."""

LOG_POSITION = BigInteger().with_variant(Integer(), "sqlite")
"""A log position; on SQLite ``INTEGER PRIMARY KEY`` is the row id itself, with no extra index."""

trace_event = Table(
    "trace_event",
    metadata,
    Column("position", LOG_POSITION, primary_key=True),
    Column("run_id", String(36), nullable=False, index=True),
    Column("stream_id", String(36), nullable=False),
    Column("stream_version", Integer, nullable=False),
    Column("event_type", String(40), nullable=False),
    Column("phase", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("timestamp", DateTime(timezone=True), nullable=False),
    Column("attributes", JSON, nullable=False),
)

trace_stream = Table(
    "trace_stream",
    metadata,
    Column("stream_id", String(36), primary_key=True),
    Column("run_id", String(36), nullable=False),
    sqlite_with_rowid=False,
)
"""Which run an invocation or collection stream belongs to (their later events omit it)."""

sse_event = Table(
    "sse_event",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("position", BigInteger, nullable=False),
    Column("event", String(16), nullable=False),
    Column("data", JSON, nullable=False),
    Index("ix_sse_event_position", "position"),
    sqlite_with_rowid=False,
)

sse_run = Table(
    "sse_run",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("session_id", String(200), nullable=False),
    Column("last_seq", Integer, nullable=False),
    Column("closed", Boolean, nullable=False),
    Column("release_content", JSON(none_as_null=True)),
    Column("fallback_type", String(40)),
    Column("termination_state", String(24)),
    Column("termination_reason", String(40)),
)

session_turn = Table(
    "session_turn",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("session_id", String(200), nullable=False, index=True),
    Column("owner", String(200), nullable=False),
    Column("turn", Integer, nullable=False),
    Column("query", Text, nullable=False),
    Column("intent", String(32)),
    Column("release_outcome", String(16)),
    Column("published_result", JSON(none_as_null=True)),
    Column("release_content", JSON(none_as_null=True)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
)


metric_sample = Table(
    "metric_sample",
    metadata,
    Column("series", Text, primary_key=True),
    Column("family", String(64), nullable=False),
    Column("part", String(16), nullable=False),
    Column("labels", Text, nullable=False),
    Column("value", BigInteger, nullable=False),
)
"""One counter, histogram bucket or histogram sum of ``GET /metrics`` per row (a few dozen rows
whatever the number of runs); ``labels`` is the series' labels as canonical JSON text."""

metric_run = Table(
    "metric_run",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("started_us", BigInteger, nullable=False),
    Column("first_seen", Boolean, nullable=False),
    Column("intent", String(32)),
    Column("fallback_type", String(40)),
    Column("termination_state", String(24)),
)
"""What the metrics need of a run that has not finished (deleted when it finishes)."""

metric_invocation = Table(
    "metric_invocation",
    metadata,
    Column("stream_id", String(36), primary_key=True),
    Column("tool", Text, nullable=False),
    Column("origin", Text, nullable=False),
    Column("started_us", BigInteger, nullable=False),
)
"""The tool, origin and start (microseconds since the epoch) of each tool invocation that has
not ended (deleted when it ends)."""


read_schema = Table(
    "read_schema",
    metadata,
    Column("fingerprint", String(64), primary_key=True),
)
"""The fingerprint of the table definitions the read tables were created with."""


def schema_fingerprint() -> str:
    """A digest of the read tables' columns, types, keys, indexes and views (changes with code)."""
    parts: list[str] = []
    for table in sorted(metadata.tables.values(), key=lambda t: t.name):
        for column in table.columns:
            parts.append(
                f"{table.name}.{column.name}:{column.type!r}:{column.nullable}:{column.primary_key}"
            )
        parts.extend(  # by what it orders: an index=True column's index is only named at DDL
            sorted(
                f"{table.name}#{[str(e) for e in index.expressions]}:{index.unique}"
                for index in table.indexes
            )
        )
        parts.append(f"{table.name}:{sorted(table.dialect_kwargs.items())}")
    parts.append(views_text())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def create_read_tables(engine: Engine) -> bool:
    """Create the read tables and analytics views; recreate them when the code changed them.

    Read tables are projections: when their definition changed (a new column, say), they are
    dropped and created empty, with every tracking position back at 0, and the projections
    rebuild them from the log. Returns True when that happened. Safe to run again and, on
    PostgreSQL, from several processes at once.
    """
    fingerprint = schema_fingerprint()
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
        found = set(inspect(connection).get_table_names())
        stored = (
            connection.scalar(select(read_schema.c.fingerprint))
            if read_schema.name in found
            else None
        )
        if stored == fingerprint:
            return False
        stale = stored is not None or bool(found & set(metadata.tables) - {read_schema.name})
        if stale:
            drop_views(connection)  # on PostgreSQL a view holds on to its table
            metadata.drop_all(connection)
        metadata.create_all(connection)
        create_views(connection)
        connection.execute(read_schema.insert(), {"fingerprint": fingerprint})
        return stale


SCHEMA_LOCK = 0x48_41_52_4E_45_53_53
"""The advisory lock that serialises read-schema changes across processes on PostgreSQL."""
