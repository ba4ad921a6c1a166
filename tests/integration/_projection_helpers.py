"""Shared by the projection tests: scripted runs on a real store, and the read tables as rows."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from enum import Enum
from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, Engine, Table, func, select

from application.chat import ChatResult
from application.store import HarnessStore
from bootstrap.composition import Services
from domain.collection import Collection
from domain.errors import UnknownAggregateError
from domain.run import Run
from domain.states import CancellationReason
from domain.tool_invocation import ToolInvocation
from infrastructure.model_scripted import load_scenario
from infrastructure.read_tables import diagnosis_run, metadata
from projections.base import Positioned, positioned
from projections.runner import Projector
from tests.helpers import SCENARIOS, scripted
from tests.integration.runs.test_outcome_table import ROWS

QUERY = "why is checkout slow?"

CANCELS = {
    "client_disconnected": ("model", CancellationReason.CLIENT_DISCONNECTED),
    "paths/aborted_progress": ("model", CancellationReason.USER_REQUESTED),
    "paths/cancel_during_tool": ("tool", CancellationReason.USER_REQUESTED),
}
"""Scenarios that hang (in the model or the ``search_logs`` tool) until the test cancels them."""

FLEET = [row.scenario for row in ROWS] + [
    "paths/cancel_during_tool",
    "paths/aborted_progress",
    "paths/repair_succeeds",
    "paths/budget_spent_in_release",
]
"""Every SPEC §10 row plus a few runtime paths (two user cancels among them)."""
INTERLEAVED = ("missing_context", "limited_checks", "conclusion_supported")
"""Started together in one session, then executed last-started first."""


def run_scenario(services: Services, name: str, session_id: str = "session-1") -> ChatResult:
    """Run one scenario to its end; a hanging one is cancelled once it hangs."""
    with scripted(services, name) as made:
        if name not in CANCELS:
            return made.service.ask(session_id, QUERY)
        where, reason = CANCELS[name]
        hanging = made.provider.hanging if where == "model" else made.tools["search_logs"].hanging
        run, _ = made.service.begin(session_id, QUERY)
        run_id = run.id
        results: list[ChatResult] = []
        worker = threading.Thread(target=lambda: results.append(made.service.execute(run)))
        worker.start()
        try:
            assert hanging.wait(timeout=60)
            services.store.cancel(run_id, reason)
        finally:
            made.release()  # the late answer arrives after the cancel
            worker.join(timeout=60)
        assert len(results) == 1
        return results[0]


def run_interleaved(services: Services, session_id: str) -> list[ChatResult]:
    """Start :data:`INTERLEAVED` runs in one session, then execute them in reverse order."""
    with (
        scripted(services, INTERLEAVED[0]) as first,
        scripted(services, INTERLEAVED[1]) as second,
        scripted(services, INTERLEAVED[2]) as third,
    ):
        made = [first, second, third]
        runs = [h.service.begin(session_id, QUERY)[0] for h in made]
        results = [h.service.execute(r) for h, r in reversed(list(zip(made, runs, strict=True)))]
    return results[::-1]


def run_fleet(services: Services, after_each: Callable[[], object]) -> dict[str, ChatResult]:
    """Every :data:`FLEET` scenario (in three sessions) and the interleaved ones, in one store.

    ``after_each`` runs after every run (e.g. a projector catching up in small batches). Keys are
    the scenario names; the interleaved runs are ``interleaved/<name>``.
    """
    results: dict[str, ChatResult] = {}
    for index, name in enumerate(FLEET):
        results[name] = run_scenario(services, name, f"session-{index % 3}")
        after_each()
    for name, result in zip(INTERLEAVED, run_interleaved(services, "session-x"), strict=True):
        results[f"interleaved/{name}"] = result
    after_each()
    return results


def conclusions_of(name: str) -> set[str]:
    """Every conclusion statement a scenario's model could draft (never in a fallback)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            conclusion = value.get("conclusion")
            if isinstance(conclusion, dict) and "statement" in conclusion:
                found.add(str(conclusion["statement"]))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(load_scenario(SCENARIOS / f"{name}.yaml"))
    return found


def dump(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """Every read table's rows, sorted by primary key."""
    tables: dict[str, list[dict[str, Any]]] = {}
    with engine.connect() as connection:
        for table in metadata.sorted_tables:
            keys = [column.name for column in table.primary_key.columns]
            rows = [dict(row) for row in connection.execute(select(table)).mappings()]
            tables[table.name] = sorted(rows, key=lambda row: [str(row[k]) for k in keys])
    return tables


def notifications(store: HarnessStore) -> list[Positioned]:
    """The whole log as (position, domain event, stream id)."""
    return positioned(store.mapper, store.recorder.select_notifications(start=1, limit=100_000))


def rows(
    engine: Engine, table: Table, *where: ColumnElement[bool], order_by: Sequence[Any] = ()
) -> list[dict[str, Any]]:
    """Plain SQL: the rows of ``table`` that match ``where``."""
    with engine.connect() as connection:
        found = connection.execute(select(table).where(*where).order_by(*order_by))
        return [dict(row) for row in found.mappings()]


def run_row(engine: Engine, run_id: UUID | str) -> dict[str, Any]:
    """The one ``diagnosis_run`` row of a run."""
    (row,) = rows(engine, diagnosis_run, diagnosis_run.c.run_id == str(run_id))
    return row


def count(engine: Engine, table: Table) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(select(func.count()).select_from(table)) or 0)


def value(member: Enum | None) -> str | None:
    return None if member is None else str(member.value)


def plain(content: Any) -> Any:
    """As it reads back from a JSON column."""
    return json.loads(json.dumps(content))


def utc_day(moment: datetime) -> str:
    """SQLite returns naive UTC times, PostgreSQL aware ones."""
    return (moment.astimezone(UTC) if moment.tzinfo else moment).date().isoformat()


def collection_stop_reason(store: HarnessStore, run_id: UUID) -> str | None:
    """The stop reason the run's Collection aggregate holds (None: no collection, or no stop)."""
    try:
        return value(store.get_collection(run_id).stop_reason)
    except UnknownAggregateError:
        return None


def owner(store: HarnessStore, owners: dict[UUID, str], stream: UUID) -> str:
    """The run a stream belongs to, as its aggregate says (``owners`` caches it)."""
    if stream not in owners:
        aggregate: object = store.repository.get(stream)
        assert isinstance(aggregate, Run | ToolInvocation | Collection)
        owners[stream] = str(aggregate.id if isinstance(aggregate, Run) else aggregate.run_id)
    return owners[stream]


class LosesTheRace(Projector):
    """A projector whose first step lets another runner step between its read and its write.

    That is the race of two runners made deterministic: the loser has read its positions (and
    then the log), the winner commits the same batch, then the loser tries to claim it.
    """

    def __init__(self, store: HarnessStore, engine: Engine, winner: Projector, **kw: Any) -> None:
        super().__init__(store, engine, **kw)
        self.winner = winner
        self.raced = False

    def positions(self) -> dict[str, int]:
        found = super().positions()
        if not self.raced:
            self.raced = True
            self.winner.step()
        return found


def session_time_zone(zone: str) -> Callable[[Any, Any], None]:
    """A ``connect`` listener setting a PostgreSQL session's TimeZone (as a server default)."""

    def set_zone(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
        dbapi_connection.commit()

    return set_zone
