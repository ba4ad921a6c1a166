"""Queries over the read tables: what the API and the CLI show (no SQL anywhere else).

Every function takes a SQLAlchemy ``Connection`` and returns plain rows (dicts) or values,
newest first where a list is paged; the run listing is :mod:`projections.run_listing`.
"""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING, Any
from uuid import UUID

from sqlalchemy import func, select

from application.recovery import Unfinished
from domain.states import DbStatus
from infrastructure.read_tables import (
    diagnosis_run,
    projection_tracking,
    session_turn,
    sse_event,
    sse_run,
    trace_event,
)
from projections.sse_feed import SseFeed

if TYPE_CHECKING:
    from collections.abc import Collection
    from datetime import datetime

    from sqlalchemy import Connection

Row = dict[str, Any]


def run_row(connection: Connection, run_id: str) -> Row | None:
    """The ``diagnosis_run`` row of one run, or None."""
    found = connection.execute(select(diagnosis_run).where(diagnosis_run.c.run_id == run_id))
    row = found.mappings().first()
    return dict(row) if row else None


def diagnoses_between(
    connection: Connection, since: datetime, until: datetime, limit: int
) -> list[str]:
    """Up to ``limit`` finished DIAGNOSIS runs created in ``[since, until)``, oldest first."""
    column = diagnosis_run.c
    found = connection.execute(
        select(column.run_id)
        .where(
            column.intent == "DIAGNOSIS",
            column.finished_at.is_not(None),
            column.created_at >= since,
            column.created_at < until,
        )
        .order_by(column.created_at, column.run_id)
        .limit(limit)
    )
    return [str(run_id) for run_id in found.scalars()]


def run_ids_starting(connection: Connection, prefix: str, limit: int) -> list[str]:
    """Up to ``limit`` run ids that start with ``prefix`` (lower-case hex and dashes), sorted."""
    return ids_starting(connection, diagnosis_run.c.run_id, prefix, limit)


def ids_starting(connection: Connection, column: Any, prefix: str, limit: int) -> list[str]:
    """Up to ``limit`` values of the id ``column`` that start with ``prefix``, sorted."""
    found = connection.scalars(
        select(column)
        .where(column.startswith(prefix, autoescape=True))
        .order_by(column)
        .limit(limit)
    )
    return [str(value) for value in found]


def run_ids_sharing_prefix(
    connection: Connection, run_ids: Collection[str], length: int
) -> list[str]:
    """Every run id whose first ``length`` characters are also those of another run id given.

    What a short id needs to be unique: the ids it could be confused with.
    """
    head = func.substr(diagnosis_run.c.run_id, 1, length)
    shared = (
        select(head.label("head"))
        .where(head.in_({run_id[:length] for run_id in run_ids}))
        .group_by(head)
        .having(func.count() > 1)
    )
    found = connection.scalars(select(diagnosis_run.c.run_id).where(head.in_(shared)))
    return [str(run_id) for run_id in found]


def trace_rows(connection: Connection, run_id: str) -> list[Row]:
    """A run's timeline in log order."""
    found = connection.execute(
        select(trace_event).where(trace_event.c.run_id == run_id).order_by(trace_event.c.position)
    )
    return [dict(row) for row in found.mappings()]


def feed_after(connection: Connection, run_id: str, after_seq: int) -> list[Row]:
    """A run's public feed entries after ``after_seq`` (its SSE ids), in order."""
    column = sse_event.c
    found = connection.execute(
        select(sse_event)
        .where(column.run_id == run_id, column.seq > after_seq)
        .order_by(column.seq)
    )
    return [dict(row) for row in found.mappings()]


def feed_backlog(connection: Connection, run_id: str, after_seq: int) -> tuple[list[Row], bool]:
    """:func:`feed_after`, and whether the feed has its last entry, in one statement.

    The last entry is ``done``, or a cancelled run's ``failure``. Both come from one snapshot,
    so a feed that is closed comes with its last entry. A run the feed does not know yet has
    neither (its entries come with its ``sse_run`` row).
    """
    entry = sse_event.c
    found = connection.execute(
        select(sse_run.c.closed.label("_closed"), sse_event)
        .select_from(
            sse_run.outerjoin(
                sse_event, (entry.run_id == sse_run.c.run_id) & (entry.seq > after_seq)
            )
        )
        .where(sse_run.c.run_id == run_id)
        .order_by(entry.seq)
    )
    rows, closed = [], False
    for row in found.mappings():
        closed = bool(row["_closed"])
        if row["seq"] is not None:  # (a run with no entry after ``after_seq``: one empty row)
            rows.append({column.name: row[column.name] for column in sse_event.columns})
    return rows, closed


def feed_since(connection: Connection, after_position: int, run_ids: Collection[str]) -> list[Row]:
    """The feed entries of ``run_ids`` produced by log entries after ``after_position``."""
    column = sse_event.c
    found = connection.execute(
        select(sse_event)
        .where(column.position > after_position, column.run_id.in_(list(run_ids)))
        .order_by(column.position, column.seq)
    )
    return [dict(row) for row in found.mappings()]


def feed_position(connection: Connection) -> int:
    """The log position the feed has been applied to (0 when it has no tracking row yet).

    Every feed entry at or before it is committed: the position moves in the entries'
    transaction.
    """
    found = connection.scalar(
        select(projection_tracking.c.position).where(projection_tracking.c.name == SseFeed.name)
    )
    return int(found or 0)


def session_rows(connection: Connection, session_id: str) -> list[Row]:
    """A session's turns in order."""
    found = connection.execute(
        select(session_turn)
        .where(session_turn.c.session_id == session_id)
        .order_by(session_turn.c.turn)
    )
    return [dict(row) for row in found.mappings()]


def last_turn_run(connection: Connection, session_id: str) -> str | None:
    """The run id of a session's latest turn (None: a new session)."""
    found = connection.scalar(
        select(session_turn.c.run_id)
        .where(session_turn.c.session_id == session_id)
        .order_by(session_turn.c.turn.desc())
        .limit(1)
    )
    return None if found is None else str(found)


def unfinished_runs(connection: Connection) -> list[Unfinished]:
    """Every run the read side shows without ``RUN_FINISHED``, oldest first (recovery's list).

    ``status`` stays RUNNING until ``RUN_FINISHED``, so a read side that lags only delays a
    run's recovery to a later sweep, which decides each run on its own stream anyway.
    """
    column = diagnosis_run.c
    rows = connection.execute(
        select(column.run_id, column.created_at)
        .where(column.status == DbStatus.RUNNING.value)
        .order_by(column.created_at)
    ).all()
    return [
        Unfinished(
            UUID(run_id),
            created if created.tzinfo else created.replace(tzinfo=UTC),  # SQLite: naive UTC
        )
        for run_id, created in rows
    ]
