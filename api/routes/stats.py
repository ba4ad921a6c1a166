"""``/v1/stats/daily``: finished runs per UTC day and group, for the console's Overview."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query

from api.auth import Caller, Principal
from api.deps import WorkerDep
from api.errors import BadRequest, error_responses
from api.schemas_ops import DailyGroupPublic, DailyPublic
from projections.daily import daily_rows

router = APIRouter(prefix="/v1/stats", tags=["stats"])

DEFAULT_DAYS = 14
"""Days shown when the request names none: the last two weeks, today included."""
MAX_DAYS = 366
"""The longest range one request may ask for."""


def reader_of_all(caller: Caller) -> Principal:
    """Auditors and admins only: ``run_daily`` counts every user's runs and has no owner."""
    if not caller.reads_all:
        raise HTTPException(
            403,
            f"the {caller.role} role may not read daily totals: they count every user's runs"
            " (run_daily has no owner column), so only auditors and admins may",
        )
    return caller


@router.get(
    "/daily",
    summary="Daily runs and latency percentiles",
    responses=error_responses(400, 401, 403, 503),
)
def daily(
    worker: WorkerDep,
    _reader: Annotated[Principal, Depends(reader_of_all)],
    first: Annotated[
        date | None, Query(alias="from", description="First UTC day (default: 13 days before to).")
    ] = None,
    last: Annotated[
        date | None, Query(alias="to", description="Last UTC day, included (default: today).")
    ] = None,
) -> DailyPublic:
    """Every ``run_daily`` row of the days asked for: runs, p50/p95 duration, tokens per group.

    A group is one intent × release outcome × fallback type × termination state; its
    percentiles are its own (groups' percentiles do not add up). Auditors and admins only.
    """
    last = last or datetime.now(UTC).date()
    first = first or last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        raise BadRequest(f"from ({first}) is after to ({last}): give from <= to")
    if (last - first).days + 1 > MAX_DAYS:
        raise BadRequest(f"from {first} to {last} is more than {MAX_DAYS} days: ask for fewer")
    worker.fresh("diagnosis_run")
    with worker.engine.connect() as connection:
        rows = daily_rows(connection, first, last)
    data = [DailyGroupPublic.model_validate(row) for row in rows]
    return DailyPublic(first_day=first, last_day=last, data=data, count=len(data))
