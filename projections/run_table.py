"""``diagnosis_run`` (SPEC §12, with the termination columns) and the ``run_daily`` analytics."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select

from domain.collection import Collection
from domain.run import Run
from domain.states import BudgetKind, Intent, ModelStepPurpose, ReleaseOutcome
from infrastructure.read_tables import diagnosis_run, run_daily
from projections.base import Positioned, Row, RowCache, jsonable, text, uuid_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Connection

STATUS_BY_OUTCOME = {
    ReleaseOutcome.SUCCESS: "SUCCESS",
    ReleaseOutcome.FALLBACK: "SUCCESS",
    ReleaseOutcome.FAILED: "FAILED",
    ReleaseOutcome.CANCELLED: "CANCELLED",
}
"""SPEC §12: ``status=SUCCESS`` means "handled with safe content", not "has a conclusion"."""

GROUP = ("intent", "release_outcome", "fallback_type", "termination_state")


class RunTable:
    """One row per run, kept current from its Run and Collection streams."""

    name = "diagnosis_run"
    tables = (diagnosis_run, run_daily)

    def process(self, connection: Connection, events: Sequence[Positioned]) -> None:
        """Apply the batch, then recompute the analytics groups of the runs that finished."""
        rows = RowCache(connection, diagnosis_run, "run_id")
        rows.preload(uuid_text(e.originator_id) for _, e in events if isinstance(e, Run.Event))
        finished: list[Row] = []
        for position, event in events:
            if isinstance(event, Run.Event):
                row = self._apply(rows, event)
                if row is not None:
                    row["last_position"] = position
                    if isinstance(event, Run.RunFinished):
                        finished.append(row)
            elif isinstance(event, Collection.CollectionStarted):
                row = rows.get(uuid_text(event.run_id))
                if row is not None:
                    row["collection_id"] = uuid_text(event.originator_id)
            elif isinstance(event, Collection.CollectionStop):
                self._collection_stop(connection, rows, event, position)
        rows.flush()
        for key in {_group_key(row) for row in finished}:
            _recompute_group(connection, key)

    def _apply(self, rows: RowCache, event: Run.Event) -> Row | None:
        run_id = uuid_text(event.originator_id)
        if isinstance(event, Run.RunStarted):
            return rows.add(_new_row(run_id, event))
        row = rows.get(run_id)
        if row is None:
            return None  # the run's start was never seen: nothing to attach this to
        _update(row, event)
        return row

    def _collection_stop(
        self,
        connection: Connection,
        rows: RowCache,
        event: Collection.CollectionStop,
        position: int,
    ) -> None:
        collection = uuid_text(event.originator_id)
        run_id = next(
            (k for k, r in rows.rows.items() if r is not None and r["collection_id"] == collection),
            None,
        ) or connection.scalar(
            select(diagnosis_run.c.run_id).where(diagnosis_run.c.collection_id == collection)
        )
        row = rows.get(run_id) if run_id else None
        if row is not None:
            row["stop_reason"] = text(event.stop_reason)
            row["last_position"] = position


def _new_row(run_id: str, event: Run.RunStarted) -> Row:
    return {
        "run_id": run_id,
        "session_id": event.session_id,
        "query": event.query,
        "intent": None,
        "status": "RUNNING",
        "application_status": None,
        "release_outcome": None,
        "fallback_type": None,
        "termination_state": None,
        "termination_reason": None,
        "stop_reason": None,
        "safe_answer": None,
        "conclusion": None,
        "published_result": None,
        "release_content": None,
        "created_at": event.timestamp,
        "deadline": event.deadline,
        "finished_at": None,
        "duration_ms": None,
        "tokens_in": 0,
        "tokens_out": 0,
        "model_calls": 0,
        "agent_steps": 0,
        "tool_calls": 0,
        "rejected_tool_requests": 0,
        "collection_id": None,
        "last_position": 0,
    }


def _update(row: Row, event: Run.Event) -> None:  # noqa: C901 (one arm per event type)
    match event:
        case Run.RoutingDecision():
            row["intent"] = text(event.intent)
        case Run.ApplicationStatusChanged():
            row["application_status"] = text(event.status)
        case Run.AgentModelStep():
            row["model_calls"] += 1
            row["tokens_in"] += event.tokens_in
            row["tokens_out"] += event.tokens_out
            row["agent_steps"] += event.purpose is ModelStepPurpose.AGENT
        case Run.BudgetCharged():
            row["tool_calls"] += event.amount if event.kind is BudgetKind.TOOL_CALLS else 0
        case Run.ToolRequestRejected():
            row["rejected_tool_requests"] += 1
        case Run.ReleaseDecision():
            row["release_content"] = jsonable(event.content)
            row["fallback_type"] = text(event.fallback_type)
        case Run.RunTerminated():
            row["termination_state"] = text(event.state)
            row["termination_reason"] = str(event.reason.value)
        case Run.RunFinished():
            _finish(row, event)
        case _:
            pass  # the other events do not change the row


def _finish(row: Row, event: Run.RunFinished) -> None:
    outcome = event.release_outcome
    row["release_outcome"] = outcome.value
    row["status"] = STATUS_BY_OUTCOME[outcome]
    row["finished_at"] = event.timestamp
    row["duration_ms"] = event.duration_ms
    published = outcome in (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)
    content = row["release_content"] if published else None
    row["safe_answer"] = content
    if outcome is not ReleaseOutcome.FALLBACK:
        row["fallback_type"] = None  # a decided fallback that was not published is no outcome
    conclusion = content.get("conclusion") if isinstance(content, dict) else None
    row["conclusion"] = conclusion if isinstance(conclusion, str) else None
    diagnosed = row["intent"] == Intent.DIAGNOSIS.value and outcome is ReleaseOutcome.SUCCESS
    row["published_result"] = content if diagnosed else None


def _group_key(row: Row) -> tuple[str, ...]:
    created: datetime = row["created_at"]
    if created.tzinfo is not None:  # PostgreSQL hands times back in the session's zone
        created = created.astimezone(UTC)
    day = created.date().isoformat()
    return (day, *(row[column] or "" for column in GROUP))


def _recompute_group(connection: Connection, key: tuple[str, ...]) -> None:
    """Rewrite one analytics row from the finished runs of its group (idempotent)."""
    day, *values = key
    column = diagnosis_run.c
    query = select(column.duration_ms, column.tokens_in, column.tokens_out)
    for name, value in zip(GROUP, values, strict=True):
        query = query.where(column[name].is_(None) if value == "" else column[name] == value)
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    query = query.where(
        column.finished_at.is_not(None),
        column.created_at >= start,
        column.created_at < start + timedelta(days=1),
    )
    found = list(connection.execute(query))
    durations = sorted(int(r.duration_ms or 0) for r in found)
    where = [run_daily.c.day == day] + [
        run_daily.c[name] == value for name, value in zip(GROUP, values, strict=True)
    ]
    connection.execute(run_daily.delete().where(*where))
    if found:
        connection.execute(
            run_daily.insert(),
            {
                "day": day,
                **dict(zip(GROUP, values, strict=True)),
                "runs": len(found),
                "duration_p50_ms": _percentile(durations, 50),
                "duration_p95_ms": _percentile(durations, 95),
                "tokens_in": sum(r.tokens_in for r in found),
                "tokens_out": sum(r.tokens_out for r in found),
            },
        )


def _percentile(ordered: list[int], p: int) -> float:
    """Nearest-rank percentile of a sorted, non-empty list."""
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return float(ordered[rank - 1])
