"""``/v1/stats/…``: runs, tool calls and model calls per UTC day and group (the Overview's)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from api.auth import Caller, Principal
from api.deps import Worker, WorkerDep
from api.problem_docs import error_responses
from api.schemas_ops import (
    DailyGroupPublic,
    DailyPublic,
    ModelStatsGroupPublic,
    ModelStatsPublic,
    ToolStatsGroupPublic,
    ToolStatsPublic,
)
from projections.daily import daily_rows, model_rows, tool_rows

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy import Connection

router = APIRouter(prefix="/v1/stats", tags=["stats"])

DEFAULT_DAYS = 14
"""Days shown when the request names none: the last two weeks, today included."""
MAX_DAYS = 366
"""The longest range one request may ask for."""


def reader_of_all(caller: Caller) -> Principal:
    """Auditors and admins only: the daily tables count every user's runs and have no owner."""
    if not caller.reads_all:
        raise HTTPException(
            403,
            f"the {caller.role} role may not read daily totals: they count every user's runs"
            " (run_daily has no owner column, nor have tool_stats and model_stats), so only"
            " auditors and admins may",
        )
    return caller


Reader = Annotated[Principal, Depends(reader_of_all)]
First = Annotated[
    date | None,
    Query(alias="from", description="First UTC day (default: 13 days before to; at most 365)."),
]
Last = Annotated[
    date | None, Query(alias="to", description="Last UTC day, included (default: today).")
]


def days_asked(first: date | None, last: date | None) -> tuple[date, date]:
    """The days a request covers: ``to`` defaults to today, ``from`` to two weeks before it."""
    last = last or datetime.now(UTC).date()
    earliest = _before(last, MAX_DAYS - 1)
    return (max(first, earliest) if first else _before(last, DEFAULT_DAYS - 1)), last


def rows_of_days(
    worker: Worker,
    projection: str,
    query: Callable[[Connection, date, date], list[dict[str, Any]]],
    asked: tuple[date | None, date | None],
) -> tuple[date, date, list[dict[str, Any]]]:
    """The days asked (:func:`days_asked`) and ``query``'s rows of them, ``projection`` fresh."""
    first, last = days_asked(*asked)
    worker.fresh(projection)
    with worker.engine.connect() as connection:
        return first, last, query(connection, first, last)


def _before(day: date, days: int) -> date:
    """``days`` days before ``day``, or the first day there is."""
    return day - timedelta(days=min(days, day.toordinal() - 1))


@router.get(
    "/daily",
    operation_id="get_daily_stats",
    summary="Daily runs and latency percentiles",
    responses=error_responses(401, 403, 503),
)
def daily(
    worker: WorkerDep, _reader: Reader, first: First = None, last: Last = None
) -> DailyPublic:
    """Every ``run_daily`` row of the days asked for: runs, p50/p95 duration, tokens per group.

    At most 366 days: an earlier ``from`` is moved up to 365 days before ``to`` (the answer's
    ``first_day`` says which days it covers); a ``from`` after ``to`` covers no day.
    A group is one intent × release outcome × fallback type × termination state; its
    percentiles are its own (groups' percentiles do not add up). Auditors and admins only.
    """
    first, last, rows = rows_of_days(worker, "diagnosis_run", daily_rows, (first, last))
    data = [DailyGroupPublic.model_validate(row) for row in rows]
    return DailyPublic(first_day=first, last_day=last, data=data, count=len(data))


@router.get(
    "/tools",
    operation_id="get_tool_stats",
    summary="Daily tool calls, errors and latency percentiles",
    responses=error_responses(401, 403, 503),
)
def tools(
    worker: WorkerDep, _reader: Reader, first: First = None, last: Last = None
) -> ToolStatsPublic:
    """Every ``tool_stats`` row of the days asked for: calls, p50/p95 duration, bytes per group.

    A group is one tool × origin × outcome (evidence status) × error code; a tool's error rate
    on a day is its ERROR groups' calls over all its calls. Days as for ``/v1/stats/daily``.
    Auditors and admins only.
    """
    first, last, rows = rows_of_days(worker, "analytics", tool_rows, (first, last))
    data = [ToolStatsGroupPublic.model_validate(row) for row in rows]
    return ToolStatsPublic(first_day=first, last_day=last, data=data, count=len(data))


@router.get(
    "/models",
    operation_id="get_model_stats",
    summary="Daily model calls, tokens and latency percentiles",
    responses=error_responses(401, 403, 503),
)
def models(
    worker: WorkerDep, _reader: Reader, first: First = None, last: Last = None
) -> ModelStatsPublic:
    """Every ``model_stats`` row of the days asked for: calls, p50/p95 latency, tokens per group.

    A group is one provider × model × purpose × outcome × error class. Days as for
    ``/v1/stats/daily``. Auditors and admins only.
    """
    first, last, rows = rows_of_days(worker, "analytics", model_rows, (first, last))
    data = [ModelStatsGroupPublic.model_validate(row) for row in rows]
    return ModelStatsPublic(first_day=first, last_day=last, data=data, count=len(data))
