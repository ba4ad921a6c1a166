"""Shared by the analytics tests: a fleet of real runs, exported, and the read tables' own sums."""

from __future__ import annotations

from collections import Counter
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from infrastructure.analytics_export import export
from infrastructure.read_tables import diagnosis_run
from projections.runner import Projector
from tests.integration._projection_helpers import rows, run_fleet, run_scenario, utc_day

if TYPE_CHECKING:
    from pathlib import Path

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from bootstrap.composition import Services

EVERY_DAY = (date(2000, 1, 1), date(2999, 12, 31))
TOOL_FAILURES = ("paths/tool_fails", "paths/size_byte_budget")
"""Scenarios whose tools fail: the fleet's error counts are never all zero."""
GUARD_TYPES = (
    "EVIDENCE_GUARD_INITIAL",
    "EVIDENCE_REPAIR",
    "EVIDENCE_GUARD_RECHECK",
    "SEMANTIC_GUARD_DECISION",
    "RELEASE_DECISION",
)


def export_fleet(services: Services, store: HarnessStore, engine: Engine, folder: Path) -> Path:
    """Every SPEC §10 row, a few runtime paths and tool failures, exported as Parquet and CSV.

    The projector follows in small batches, so invocations and runs span batches as they do
    live. Returns ``folder``, holding ``analytics/`` (Parquet) and ``analytics-csv/``.
    """
    follower = Projector(store, engine, batch_size=7)
    run_fleet(services, follower.catch_up)
    for name in TOOL_FAILURES:
        run_scenario(services, name, "session-failures")
        follower.catch_up()
    export(engine, folder / "analytics", "parquet", *EVERY_DAY)
    export(engine, folder / "analytics-csv", "csv", *EVERY_DAY)
    return folder


def scalar(engine: Engine, sql: str) -> Any:
    """One value of plain SQL over the read tables."""
    with engine.connect() as connection:
        return connection.execute(text(sql)).scalar()


def trace_counts(engine: Engine) -> Counter[str]:
    """How many events of each type the trace holds (another projection of the same log)."""
    with engine.connect() as connection:
        found = connection.execute(
            text("SELECT event_type, count(*) FROM trace_event GROUP BY event_type")
        ).all()
    return Counter({kind: int(n) for kind, n in found})


def read_table_totals(engine: Engine) -> dict[str, Any]:
    """The totals the exported files must equal, by plain SQL over the read tables."""
    trace = trace_counts(engine)
    return {
        "runs": scalar(engine, "SELECT count(*) FROM diagnosis_run"),
        "finished": scalar(
            engine, "SELECT count(*) FROM diagnosis_run WHERE finished_at IS NOT NULL"
        ),
        "tokens_in": scalar(engine, "SELECT sum(tokens_in) FROM diagnosis_run"),
        "tokens_out": scalar(engine, "SELECT sum(tokens_out) FROM diagnosis_run"),
        "model_calls": scalar(engine, "SELECT sum(model_calls) FROM diagnosis_run"),
        "tool_calls": trace["TOOL_INVOCATION_READY"] + trace["TOOL_INVOCATION_FAILED"],
        "tool_errors": trace["TOOL_INVOCATION_FAILED"],
        "guard_decisions": sum(trace[kind] for kind in GUARD_TYPES),
    }


def fallbacks(engine: Engine) -> dict[tuple[str, str], int]:
    """Published fallbacks per UTC day of creation and type, from ``diagnosis_run``."""
    found = rows(engine, diagnosis_run, diagnosis_run.c.release_outcome == "FALLBACK")
    return dict(Counter((utc_day(r["created_at"]), r["fallback_type"]) for r in found))
