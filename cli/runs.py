"""``harness runs``: list, show, explain, cancel and recover runs, straight from the database.

These read the same projections and the same log as the HTTP API, without a running service
(an operator's tool: there are no API keys here; whoever can reach the database sees all).
Reads bring the read tables up to the log head first; every RUN_ID may be a unique prefix.
Results go to stdout, counts and notes to stderr.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from cli.common import err_console, fail, out_console
from cli.common import opened as opened_services
from cli.reads import Freshness, bring_up_to_date, is_full_id, resolve_run_id
from cli.terminal_text import spelled_out

if TYPE_CHECKING:
    from collections.abc import Iterator
    from enum import Enum
    from uuid import UUID

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from bootstrap.composition import Services

runs_app = typer.Typer(
    help="List, inspect, explain, cancel and recover runs.", no_args_is_help=True
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
RunIdArgument = Annotated[
    str, typer.Argument(help="The run's id, or a unique prefix of it (as `runs list` shows).")
]


@dataclass
class Opened:
    """One command's services, and how it finds runs in the read tables."""

    services: Services

    @property
    def engine(self) -> Engine:
        """The read side's engine."""
        return self.services.engine

    @property
    def store(self) -> HarnessStore:
        """The event store."""
        return self.services.store

    @property
    def where(self) -> str:
        """The store, as error messages name it."""
        return self.services.settings.database.describe()

    def fresh(self) -> Freshness:
        """Bring the read tables up to the log head (or say why not)."""
        return bring_up_to_date(self.services)

    def run_id(self, text: str) -> UUID:
        """The run ``text`` names (a prefix is looked up in read tables brought up to date)."""
        if not is_full_id(text):
            self.fresh()
        return resolve_run_id(self.engine, text, self.where)


@contextmanager
def opened() -> Iterator[Opened]:
    """The services for a command; store and database failures exit 2 naming the store."""
    with opened_services() as services:
        yield Opened(services)


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, default=str, indent=2))


def _choice(option: str, value: str | None, enum: type[Enum]) -> str | None:
    """``value`` as one of ``enum``'s values (any case); exit 2 naming the valid ones."""
    if value is None:
        return None
    valid = [member.value for member in enum]
    if value.upper() not in valid:
        fail(f"{option} {value!r} is not one of {', '.join(valid)}")
    return value.upper()


@runs_app.command("list")
def list_command(
    session: Annotated[str | None, typer.Option(help="Only this session's runs.")] = None,
    state: Annotated[
        str | None, typer.Option(help="Run state, e.g. TIMED_OUT (RUNNING: not ended yet).")
    ] = None,
    outcome: Annotated[str | None, typer.Option(help="Release outcome, e.g. FALLBACK.")] = None,
    intent: Annotated[
        str | None, typer.Option(help="What the router decided, e.g. DIAGNOSIS.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """The newest runs with their query and how they ended (status, outcome, termination)."""
    from cli.runs_table import runs_table
    from domain.release_states import ReleaseOutcome
    from domain.states import DbStatus, Intent, RunState
    from projections.run_listing import RunFilter, list_runs

    chosen_state = _choice("--state", state, RunState)
    running = chosen_state == RunState.RUNNING.value  # not ended: no termination state yet
    where = RunFilter(
        session_id=session,
        status=DbStatus.RUNNING.value if running else None,
        termination_state=None if running else chosen_state,
        release_outcome=_choice("--outcome", outcome, ReleaseOutcome),
        intent=_choice("--intent", intent, Intent),
    )
    with opened() as the:
        the.fresh()
        with the.engine.connect() as connection:
            page = list_runs(connection, where, limit)
            rows = page.rows
            table = None if as_json else runs_table(connection, rows, out_console().is_terminal)
    if table is None:
        _print_json({"data": rows, "count": page.count, "count_capped": page.count_capped})
    else:
        out_console().print(table)
    err_console().print(f"{len(rows)} of {page.count}{'+' if page.count_capped else ''} run(s)")


@runs_app.command("show")
def show(run_id: RunIdArgument, as_json: JsonOption = False) -> None:
    """One run's row and its timeline."""
    from cli.runs_table import run_tables
    from projections.queries import run_row, trace_rows

    with opened() as the:
        freshness = the.fresh()
        key = str(resolve_run_id(the.engine, run_id, the.where))
        with the.engine.connect() as connection:
            row = run_row(connection, key)
            trace = trace_rows(connection, key) if row else []
    if row is None:
        fail(f"{freshness.missing(f'no run {key}')} (list them with `harness runs list`)")
    if as_json:
        _print_json({"run": row, "trace": trace})
        return
    for table in run_tables(row, trace):
        out_console().print(table)


@runs_app.command("explain")
def explain(run_id: RunIdArgument, as_json: JsonOption = False) -> None:
    """Why the run ended as it did: every troubleshooting question, answered from the log."""
    from application.explain import explain_run
    from domain.errors import UnknownAggregateError

    with opened() as the:
        key = the.run_id(run_id)
        try:
            found = explain_run(the.store, key)
        except UnknownAggregateError:
            fail(f"no run {key} in the event log of {the.where}")
    if as_json:
        typer.echo(found.model_dump_json(indent=2))
        return
    out = out_console()
    query = spelled_out(found.query)
    out.print(Text.assemble((query, "bold"), f" — {found.release_outcome or 'not finished'}"))
    for answer in found.answers:
        mark = "•" if answer.applies else "·"
        said = spelled_out(answer.answer)
        out.print(Text.assemble(f"{mark} ", (answer.asked, "bold"), f"\n  {said}"))
    for replay in found.replays:
        changed = "; ".join(f"{k} {v}" for k, v in replay.changes.items()) or "nothing changed"
        was = " ".join(filter(None, (replay.original_outcome, replay.original_fallback_type)))
        now = " ".join(filter(None, (replay.outcome, replay.fallback_type)))
        said = f"{was} -> {now}" if replay.differences else f"{now}, the same decision"
        out.print(Text.assemble("↻ ", (f"replay {replay.number}", "bold"), f" ({changed}): {said}"))


@runs_app.command("cancel")
def cancel(run_id: RunIdArgument) -> None:
    """Cancel a run (USER_REQUESTED); the worker executing it stops at its next boundary."""
    from domain.errors import UnknownAggregateError
    from domain.states import CancellationReason

    with opened() as the:
        key = the.run_id(run_id)
        try:
            result = the.store.cancel(key, CancellationReason.USER_REQUESTED)
        except UnknownAggregateError:
            fail(f"no run {key} in the event log of {the.where}")
    termination = result.termination
    if result.position is None:
        out_console().print(
            f"run {key} had already ended {termination.state.value} "
            f"({termination.reason.value}); nothing changed"
        )
        return
    out_console().print(f"run {key} cancelled at log position {result.position}")


@runs_app.command("recover")
def recover(as_json: JsonOption = False) -> None:
    """End the runs whose worker was lost (one recovery sweep, as the service runs periodically).

    Each such run ends FAILED (WORKER_LOST), or TIMED_OUT when its deadline has passed, with
    its RUN_FINISHED; runs of live workers are never touched. Safe next to running services.
    """
    from cli.runs_table import recovered_json, recovered_table

    with opened() as the:
        the.fresh()  # the candidates come from diagnosis_run
        report = the.services.recovery_sweep().sweep()
        ttl = the.services.settings.worker_lease_ttl
    if as_json:
        _print_json(recovered_json(report))
    elif report.ended:
        out_console().print(recovered_table(report))
    err_console().print(
        f"ended {len(report.ended)} run(s) of lost workers; left {report.live} run(s) of live "
        f"workers alone; {report.waiting} run(s) of silent workers wait until their lease TTL "
        f"({ttl:g}s) has passed"
    )
