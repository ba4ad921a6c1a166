"""The ``run_daily`` analytics as the console's Overview shows them: one row per group and day.

``run_daily`` counts finished runs per UTC day × intent × release outcome × fallback type ×
termination state, with each group's duration percentiles (nearest rank). It has no owner
column, so what it says is about every user's runs (the API lets only auditors and admins read
it). '' in a key column stands for "none".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from infrastructure.read_tables import run_daily

if TYPE_CHECKING:
    from datetime import date

    from sqlalchemy import Connection

DAILY_ORDER = ("day", "intent", "release_outcome", "fallback_type", "termination_state")


def daily_rows(connection: Connection, first: date, last: date) -> list[dict[str, Any]]:
    """Every ``run_daily`` row of the days ``first`` to ``last`` (both included), by day and key."""
    column = run_daily.c
    found = connection.execute(
        select(run_daily)
        .where(column.day >= first.isoformat(), column.day <= last.isoformat())
        .order_by(*(column[name] for name in DAILY_ORDER))
    )
    return [dict(row) for row in found.mappings()]
