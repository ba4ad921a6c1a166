"""``harness runs``: list, show, explain, cancel and recover runs, straight from the database.

These read the same projections and the same log as the HTTP API, without a running service
(an operator's tool: there are no API keys here; whoever can reach the database sees all).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import typer
from rich.table import Table
from sqlalchemy.exc import SQLAlchemyError

from api.cli_common import err_console, fail, load_settings, out_console
from application.explain import explain_run
from application.store import StoreError
from domain.errors import UnknownAggregateError
from domain.states import CancellationReason
from infrastructure.database import create_sql_engine
from infrastructure.eventstore import open_store
from infrastructure.recovery import recovery_sweep
from projections.queries import RunFilter, list_runs, run_row, trace_rows

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sqlalchemy import Engine

    from application.store import HarnessStore

runs_app = typer.Typer(
    help="List, inspect, explain, cancel and recover runs.", no_args_is_help=True
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@contextmanager
def _opened() -> Iterator[tuple[HarnessStore, Engine]]:
    settings = load_settings()
    try:
        store = open_store(settings)
    except StoreError as error:
        fail(str(error))
    engine = create_sql_engine(settings)
    try:
        yield store, engine
    except (SQLAlchemyError, StoreError) as error:
        fail(f"the database failed: {error}")
    finally:
        engine.dispose()
        store.close()


def _run_id(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        fail(f"{value!r} is not a run id (a UUID such as 7c35daf4-a6a6-478a-93b9-d913aeba9809)")


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, default=str, indent=2))


@runs_app.command("list")
def list_command(
    session: Annotated[str | None, typer.Option(help="Only this session's runs.")] = None,
    state: Annotated[str | None, typer.Option(help="Termination state, e.g. TIMED_OUT.")] = None,
    outcome: Annotated[str | None, typer.Option(help="Release outcome, e.g. FALLBACK.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """The newest runs with how they ended (status, release outcome, termination)."""
    where = RunFilter(
        session_id=session,
        termination_state=state.upper() if state else None,
        release_outcome=outcome.upper() if outcome else None,
    )
    with _opened() as (_, engine), engine.connect() as connection:
        rows, count = list_runs(connection, where, limit, 0)
    if as_json:
        _print_json({"data": rows, "count": count})
        return
    table = Table("run", "session", "created", "status", "outcome", "termination", "reason")
    for row in rows:
        table.add_row(
            str(row["run_id"]),
            str(row["session_id"]),
            f"{row['created_at']:%Y-%m-%d %H:%M:%S}",
            str(row["status"]),
            str(row["release_outcome"] or ""),
            str(row["termination_state"] or ""),
            str(row["termination_reason"] or ""),
        )
    out_console().print(table)
    err_console().print(f"{len(rows)} of {count} run(s)")


@runs_app.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    as_json: JsonOption = False,
) -> None:
    """One run's row and its timeline."""
    with _opened() as (_, engine), engine.connect() as connection:
        row = run_row(connection, str(_run_id(run_id)))
        trace = trace_rows(connection, run_id) if row else []
    if row is None:
        fail(f"no run {run_id} in the read tables (is it in this database? try `runs list`)")
    if as_json:
        _print_json({"run": row, "trace": trace})
        return
    summary = Table("field", "value", show_header=False)
    for name, value in row.items():
        if name not in ("safe_answer", "published_result", "release_content"):
            summary.add_row(name, "" if value is None else str(value))
    timeline = Table("position", "event", "phase", "status")
    for event in trace:
        timeline.add_row(
            str(event["position"]), event["event_type"], event["phase"], event["status"]
        )
    out = out_console()
    out.print(summary)
    out.print(timeline)


@runs_app.command("explain")
def explain(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    as_json: JsonOption = False,
) -> None:
    """Why the run ended as it did: every troubleshooting question, answered from the log."""
    with _opened() as (store, _):
        try:
            found = explain_run(store, _run_id(run_id))
        except UnknownAggregateError:
            fail(f"no run {run_id} in the event log")
    if as_json:
        typer.echo(found.model_dump_json(indent=2))
        return
    out = out_console()
    out.print(f"[bold]{found.query}[/] — {found.release_outcome or 'not finished'}")
    for answer in found.answers:
        mark = "•" if answer.applies else "·"
        out.print(f"{mark} [bold]{answer.asked}[/]\n  {answer.answer}")


@runs_app.command("cancel")
def cancel(run_id: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """Cancel a run (USER_REQUESTED); the worker executing it stops at its next boundary."""
    with _opened() as (store, _):
        try:
            result = store.cancel(_run_id(run_id), CancellationReason.USER_REQUESTED)
        except UnknownAggregateError:
            fail(f"no run {run_id} in the event log")
    termination = result.termination
    if result.position is None:
        err_console().print(
            f"run {run_id} had already ended {termination.state.value} "
            f"({termination.reason.value}); nothing changed"
        )
        return
    err_console().print(f"run {run_id} cancelled at log position {result.position}")


@runs_app.command("recover")
def recover(as_json: JsonOption = False) -> None:
    """End the runs whose worker was lost (one recovery sweep, as the service runs periodically).

    Each such run ends FAILED (WORKER_LOST), or TIMED_OUT when its deadline has passed, with
    its RUN_FINISHED; runs of live workers are never touched. Safe next to running services.
    """
    settings = load_settings()
    with _opened() as (store, engine):
        report = recovery_sweep(settings, store, engine).sweep()
    if as_json:
        _print_json(
            {
                "ended": [
                    {
                        "run_id": r.run_id,
                        "worker": r.worker,
                        "worker_was": r.liveness.value,
                        "termination_state": r.termination.state.value,
                        "termination_reason": r.termination.reason.value,
                        "position": r.position,
                    }
                    for r in report.ended
                ],
                "live": report.live,
                "waiting": report.waiting,
            }
        )
        return
    if report.ended:
        table = Table("run", "worker", "worker was", "ended", "reason", "position")
        for r in report.ended:
            table.add_row(
                str(r.run_id),
                r.worker or "(none recorded)",
                r.liveness.value,
                r.termination.state.value,
                r.termination.reason.value,
                str(r.position),
            )
        out_console().print(table)
    err_console().print(
        f"ended {len(report.ended)} run(s) of lost workers; left {report.live} run(s) of live "
        f"workers alone; {report.waiting} run(s) of silent workers wait until their lease TTL "
        f"({settings.worker_lease_ttl:g}s) has passed"
    )
