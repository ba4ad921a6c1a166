"""The daily analytics as the console's Overview shows them: one row per group and day.

``run_daily`` counts finished runs per UTC day × intent × release outcome × fallback type ×
termination state, with each group's duration percentiles (nearest rank); ``tool_stats`` the
ended tool calls per day × tool × origin × outcome × error code; ``model_stats`` the model calls
per day × provider × model × purpose × outcome × error class. None has an owner column, so
what they say is about every user's runs (the API lets only auditors and admins read them).
'' in a key column stands for "none".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from infrastructure.analytics_tables import model_stats, tool_stats
from infrastructure.read_tables import run_daily

if TYPE_CHECKING:
    from datetime import date

    from sqlalchemy import Connection, Table


def daily_rows(connection: Connection, first: date, last: date) -> list[dict[str, Any]]:
    """Every ``run_daily`` row of the days ``first`` to ``last`` (both included), by day and key."""
    return _rows(connection, run_daily, first, last)


def tool_rows(connection: Connection, first: date, last: date) -> list[dict[str, Any]]:
    """Every ``tool_stats`` row of the days ``first`` to ``last`` (both included), by key."""
    return _rows(connection, tool_stats, first, last)


def model_rows(connection: Connection, first: date, last: date) -> list[dict[str, Any]]:
    """Every ``model_stats`` row of the days ``first`` to ``last`` (both included), by key."""
    return _rows(connection, model_stats, first, last)


def _rows(connection: Connection, table: Table, first: date, last: date) -> list[dict[str, Any]]:
    """The rows of a daily table in a range of days, in its key's order (day first)."""
    column = table.c
    found = connection.execute(
        select(table)
        .where(column.day >= first.isoformat(), column.day <= last.isoformat())
        .order_by(*table.primary_key.columns)
    )
    return [dict(row) for row in found.mappings()]
