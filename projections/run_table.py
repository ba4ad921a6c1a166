"""``diagnosis_run`` (SPEC §12, with the termination columns) and the ``run_daily`` analytics."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from application.view_port import jsonable
from domain.collection import Collection
from domain.published_reader import published_conclusion
from domain.release import DB_STATUS, PUBLISHED
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import BudgetKind, DbStatus, Intent, ModelStepPurpose
from projections.base import Positioned, Written, begun_before, text, uuid_text
from projections.daily_stats import DailyStats

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.view_port import Row, ViewWriter


GROUP = ("intent", "release_outcome", "fallback_type", "termination_state")
DAILY_KEY = ("day", *GROUP)
RUN_DAILY = DailyStats(
    table="run_daily",
    index="run_duration",
    key=DAILY_KEY,
    measure="duration_ms",
    stem="duration",
    ident="run_id",
    sums=("tokens_in", "tokens_out"),
    count="runs",
)


class RunTable:
    """One row per run, kept current from its Run and Collection streams."""

    name = "diagnosis_run"
    tables = ("diagnosis_run", "run_daily", "run_duration")
    interests = (Run.Event, Collection.CollectionStarted, Collection.CollectionStop)

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        """Apply the batch, then recompute the analytics groups of the runs that finished."""
        rows = view.rows("diagnosis_run", "run_id")
        rows.preload(begun_before(events, Run.Event, Run.RunStarted))
        finished: list[Row] = []
        get, roles = rows.get, _ROLES
        for position, event, stream in events:
            role, change = roles.get(type(event)) or _role(type(event))
            if role == _RUN:
                row = get(stream)
                if row is None:
                    continue  # the run's start was never seen: nothing to attach this to
                if change is not None:
                    change(row, event)
                    if change is _finish:
                        finished.append(row)
                row["last_position"] = position
            elif role == _STARTED:
                rows.add(_new_row(stream, event))["last_position"] = position
            elif role == _COLLECTION_STARTED:
                row = get(uuid_text(event.run_id))
                if row is not None:
                    row["collection_id"] = stream
            elif role == _STOP and (row := rows.find("collection_id", stream)) is not None:
                row["stop_reason"] = text(event.stop_reason)
                row["last_position"] = position
        return Written(rows.flush() + _add_to_daily(view, finished))


def _new_row(run_id: str, event: Run.RunStarted) -> Row:
    return {
        "run_id": run_id,
        "session_id": event.session_id,
        "owner": event.owner,
        "query": event.query,
        "intent": None,
        "status": DbStatus.RUNNING.value,
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


def _routed(row: Row, event: Run.RoutingDecision) -> None:
    row["intent"] = text(event.intent)


def _status_changed(row: Row, event: Run.ApplicationStatusChanged) -> None:
    row["application_status"] = text(event.status)


def _model_step(row: Row, event: Run.AgentModelStep) -> None:
    row["model_calls"] += 1
    row["tokens_in"] += event.tokens_in
    row["tokens_out"] += event.tokens_out
    row["agent_steps"] += event.purpose is ModelStepPurpose.AGENT


def _charged(row: Row, event: Run.BudgetCharged) -> None:
    row["tool_calls"] += event.amount if event.kind is BudgetKind.TOOL_CALLS else 0


def _rejected(row: Row, _event: Run.ToolRequestRejected) -> None:
    row["rejected_tool_requests"] += 1


def _decided(row: Row, event: Run.ReleaseDecision) -> None:
    row["release_content"] = jsonable(event.content)
    row["fallback_type"] = text(event.fallback_type)


def _terminated(row: Row, event: Run.RunTerminated) -> None:
    row["termination_state"] = text(event.state)
    row["termination_reason"] = str(event.reason.value)


def _finish(row: Row, event: Run.RunFinished) -> None:
    outcome = event.release_outcome
    row["release_outcome"] = outcome.value
    row["status"] = DB_STATUS[outcome].value
    row["finished_at"] = event.timestamp
    row["duration_ms"] = event.duration_ms
    published = outcome in PUBLISHED
    content = row["release_content"] if published else None
    row["release_content"] = None  # only kept while the run is open; published as safe_answer
    row["safe_answer"] = content
    if outcome is not ReleaseOutcome.FALLBACK:
        row["fallback_type"] = None  # a decided fallback that was not published is no outcome
    row["conclusion"] = None if content is None else published_conclusion(content)
    diagnosed = row["intent"] == Intent.DIAGNOSIS.value and outcome is ReleaseOutcome.SUCCESS
    row["published_result"] = content if diagnosed else None


Change = Callable[[dict[str, Any], Any], None]
CHANGES: dict[type, Change] = {
    Run.RoutingDecision: _routed,
    Run.ApplicationStatusChanged: _status_changed,
    Run.AgentModelStep: _model_step,
    Run.BudgetCharged: _charged,
    Run.ToolRequestRejected: _rejected,
    Run.ReleaseDecision: _decided,
    Run.RunTerminated: _terminated,
    Run.RunFinished: _finish,
}
"""What each Run event class changes in its run's row (the others only its last position)."""

_RUN, _STARTED, _COLLECTION_STARTED, _STOP, _OTHER = "run", "started", "collection", "stop", ""
_ROLES: dict[type, tuple[str, Change | None]] = {}


def _role(kind: type) -> tuple[str, Change | None]:
    """How :meth:`RunTable.process` treats an event class, and its change; worked out once."""
    if issubclass(kind, Run.RunStarted):
        found: tuple[str, Change | None] = (_STARTED, None)
    elif issubclass(kind, Run.Event):
        base = next((c for c in kind.__mro__ if c in CHANGES), None)
        found = (_RUN, None if base is None else CHANGES[base])
    elif issubclass(kind, Collection.CollectionStarted):
        found = (_COLLECTION_STARTED, None)
    elif issubclass(kind, Collection.CollectionStop):
        found = (_STOP, None)
    else:
        found = (_OTHER, None)
    _ROLES[kind] = found
    return found


def _group_key(row: Row) -> tuple[str, ...]:
    created: datetime = row["created_at"]
    if created.tzinfo is not None:  # PostgreSQL hands times back in the session's zone
        created = created.astimezone(UTC)
    day = created.date().isoformat()
    return (day, *(row[column] or "" for column in GROUP))


def _add_to_daily(view: ViewWriter, finished: list[Row]) -> int:
    """Count the runs that finished in this batch into their ``run_daily`` groups; rows written.

    A few statements per batch, whatever the number of groups (:class:`DailyStats`).
    """
    return RUN_DAILY.add(
        view,
        [
            (
                _group_key(row),
                int(row["duration_ms"] or 0),
                row["run_id"],
                (row["tokens_in"], row["tokens_out"]),
            )
            for row in finished
        ],
    )
