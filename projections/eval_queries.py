"""Queries over ``eval_run`` and ``eval_case``: eval history, one evaluation, ids from prefixes.

What ``GET /v1/evals``, the console's Overview and ``harness eval list`` / ``compare`` show.
Each takes a SQLAlchemy ``Connection``; history is newest first (by when the evaluation started).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from sqlalchemy import func, select

from domain.evals import CaseResult, EvalReport, Verdict
from infrastructure.eval_tables import eval_case, eval_run
from projections.queries import ids_starting

if TYPE_CHECKING:
    from sqlalchemy import Connection

Row = dict[str, Any]


def eval_history(
    connection: Connection, model: str | None, limit: int, offset: int = 0
) -> tuple[list[Row], int]:
    """One page of ``eval_run`` rows, newest first (only ``model``'s if given), and the total."""
    column = eval_run.c
    conditions = [] if model is None else [column.model == model]
    total = connection.scalar(select(func.count()).select_from(eval_run).where(*conditions))
    page = connection.execute(
        select(eval_run)
        .where(*conditions)
        .order_by(column.started_at.desc(), column.eval_id)
        .limit(limit)
        .offset(offset)
    )
    return [_utc(dict(row)) for row in page.mappings()], int(total or 0)


def eval_row(connection: Connection, eval_id: str) -> Row | None:
    """The ``eval_run`` row of one evaluation, or None."""
    found = connection.execute(select(eval_run).where(eval_run.c.eval_id == eval_id))
    row = found.mappings().first()
    return _utc(dict(row)) if row else None


def eval_case_rows(connection: Connection, eval_id: str) -> list[Row]:
    """An evaluation's cases, in the order they were scored."""
    found = connection.execute(
        select(eval_case).where(eval_case.c.eval_id == eval_id).order_by(eval_case.c.seq)
    )
    return [dict(row) for row in found.mappings()]


def eval_ids_starting(connection: Connection, prefix: str, limit: int) -> list[str]:
    """Up to ``limit`` eval ids that start with ``prefix``, sorted."""
    return ids_starting(connection, eval_run.c.eval_id, prefix, limit)


def eval_report(connection: Connection, eval_id: UUID) -> EvalReport | None:
    """One evaluation as the read tables hold it (None: they do not show it finished)."""
    row = eval_row(connection, str(eval_id))
    if row is None or row["finished_at"] is None:
        return None
    return EvalReport(
        eval_id=UUID(row["eval_id"]),
        suite=row["suite"],
        model=row["model"],
        settings=dict(row["settings"]),
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        results=tuple(case_result(case) for case in eval_case_rows(connection, str(eval_id))),
    )


def case_result(row: Row) -> CaseResult:
    """An ``eval_case`` row as the :class:`CaseResult` it was recorded from."""
    return CaseResult(
        case_id=row["case_id"],
        question=row["question"],
        verdict=Verdict(row["verdict"]),
        published_wrong=bool(row["published_wrong"]),
        reasons=tuple(row["reasons"]),
        run_id=row["run_id"],
        state=row["state"],
        release=row["release"],
        fallback_type=row["fallback_type"],
        tokens=int(row["tokens"]),
        model_calls=int(row["model_calls"]),
        latency_ms=int(row["latency_ms"]),
    )


def _utc(row: Row) -> Row:
    """Times in UTC (SQLite hands them back without a zone; PostgreSQL in the session's)."""
    for name in ("started_at", "finished_at"):
        value: datetime | None = row[name]
        if value is not None:
            row[name] = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return row
