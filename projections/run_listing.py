"""Listing runs: one page of ``diagnosis_run`` newest first, narrowed, by offset or by key.

A page is read from an index in the listing's order (``created_at`` newest first, then
``run_id``; see ``infrastructure.read_tables``), so it costs the same on the first page and far
down: a keyset cursor (:class:`RunKey`, the last row's place) starts the next page where the
last one ended instead of skipping rows with ``OFFSET``. The number of matching runs is counted
up to :data:`COUNT_LIMIT` only, so that count stays cheap however many runs there are.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, literal, or_, select

from infrastructure.read_tables import diagnosis_run

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection

Row = dict[str, Any]
COUNT_LIMIT = 10_000
"""The most matching runs a listing counts; past it the count says "at least this many"."""
FILTERS = (
    "owner",
    "session_id",
    "intent",
    "status",
    "release_outcome",
    "fallback_type",
    "termination_state",
)


@dataclass(frozen=True)
class RunFilter:
    """What ``list_runs`` narrows by; None means any."""

    owner: str | None = None
    session_id: str | None = None
    intent: str | None = None
    status: str | None = None
    release_outcome: str | None = None
    fallback_type: str | None = None
    termination_state: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


@dataclass(frozen=True)
class RunKey:
    """A run's place in the listing's order: its creation time and id (a page's cursor)."""

    created_at: datetime
    run_id: str

    @classmethod
    def of(cls, row: Row) -> RunKey:
        """The place of a ``diagnosis_run`` row (SQLite gives naive UTC times)."""
        created: datetime = row["created_at"]
        return cls(created if created.tzinfo else created.replace(tzinfo=UTC), str(row["run_id"]))

    def cursor(self) -> str:
        """This place as an opaque, URL-safe string."""
        plain = f"{self.created_at.astimezone(UTC).isoformat()} {self.run_id}"
        return base64.urlsafe_b64encode(plain.encode()).decode().rstrip("=")

    @classmethod
    def from_cursor(cls, cursor: str) -> RunKey:
        """The place a :meth:`cursor` string names; ValueError when it names none."""
        try:
            plain = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
            created, run_id = plain.split(" ")
            when = datetime.fromisoformat(created)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ValueError(f"{cursor!r:.60} is not a cursor this listing gave") from None
        if when.tzinfo is None or len(run_id) != 36:
            raise ValueError(f"{cursor!r:.60} is not a cursor this listing gave")
        return cls(when, run_id)


@dataclass(frozen=True)
class RunsPage:
    """One page of runs, how many match in all, and where the next page starts."""

    rows: list[Row]
    count: int
    """Runs matching the filters, counted up to :data:`COUNT_LIMIT`."""
    count_capped: bool
    """More than :data:`COUNT_LIMIT` runs match: ``count`` is a lower bound."""
    next: RunKey | None
    """The last row's place when more rows follow it (None: this is the last page)."""


def conditions(where: RunFilter) -> list[ColumnElement[bool]]:
    """The SQL conditions of ``where``."""
    column = diagnosis_run.c
    found = [
        column[name] == value for name in FILTERS if (value := getattr(where, name)) is not None
    ]
    if where.created_after is not None:
        found.append(column.created_at >= where.created_after)
    if where.created_before is not None:
        found.append(column.created_at < where.created_before)
    return found


def after(key: RunKey) -> ColumnElement[bool]:
    """Rows after ``key`` in the listing's order, as a range an index can seek to."""
    column = diagnosis_run.c
    return and_(
        column.created_at <= key.created_at,
        or_(column.created_at < key.created_at, column.run_id > key.run_id),
    )


def list_runs(
    connection: Connection,
    where: RunFilter,
    limit: int,
    offset: int = 0,
    start: RunKey | None = None,
) -> RunsPage:
    """The page of ``limit`` runs (newest first) after ``start`` (or ``offset`` rows)."""
    column = diagnosis_run.c
    narrowed = conditions(where)
    found = connection.execute(
        select(diagnosis_run)
        .where(*narrowed, *([after(start)] if start is not None else []))
        .order_by(column.created_at.desc(), column.run_id)
        .limit(limit + 1)
        .offset(offset)
    )
    rows = [dict(row) for row in found.mappings()]
    matching = select(literal(1)).select_from(diagnosis_run).where(*narrowed)
    counted = connection.scalar(
        select(func.count()).select_from(matching.limit(COUNT_LIMIT + 1).subquery())
    )
    total = int(counted or 0)
    following = RunKey.of(rows[limit - 1]) if len(rows) > limit else None
    return RunsPage(rows[:limit], min(total, COUNT_LIMIT), total > COUNT_LIMIT, following)
