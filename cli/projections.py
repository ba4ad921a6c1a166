"""``harness projections …``: follow, rebuild and inspect the read side.

Results (the status table, what a rebuild applied) go to stdout; progress and notes to stderr.
"""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from cli.common import err_console, fail, opened, out_console
from cli.reads import read_tables_missing

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from rich.progress import Progress


projections_app = typer.Typer(
    help="Follow, rebuild and inspect the read side (diagnosis_run, trace_event, sse_feed,"
    " session_turn, metrics, analytics, eval_run).",
    no_args_is_help=True,
)


@projections_app.command("run")
def run() -> None:
    """Follow the log and keep every projection current until stopped (Ctrl-C or SIGTERM).

    Run one next to several service workers (with HARNESS_PROJECTIONS_IN_PROCESS=false). On
    PostgreSQL it wakes on NOTIFY and polls every HARNESS_PROJECTION_POLL seconds anyway.
    """
    from sqlalchemy.exc import SQLAlchemyError

    from application.ports import StoreError
    from infrastructure.settings import ConfigurationError
    from projections.runner import brief

    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    with opened() as services:
        where = services.settings.database.describe()
        live = services.live_projections()
        try:
            live.start()
            traces = services.trace_follower()  # OTEL_EXPORTER_OTLP_*: the live trace exporter
        except (SQLAlchemyError, StoreError) as error:
            fail(f"cannot start following the log of {where}: {brief(error)}")
        except ConfigurationError as error:
            fail(f"invalid configuration: {error}")
        exporting = " (exporting traces)" if traces else ""
        err_console().print(f"following the log of {where}{exporting}")
        stopped.wait()
        live.close()


@projections_app.command("rebuild")
def rebuild(
    name: Annotated[
        str | None, typer.Argument(help="One projection (default: all of them).")
    ] = None,
) -> None:
    """Empty a projection's tables and apply the whole log again from position 0."""
    from sqlalchemy.exc import SQLAlchemyError

    from application.ports import StoreError
    from projections.base import UnreadableLogEntry
    from projections.runner import brief

    with opened() as services:
        projector = services.projector()
        try:
            names = [name] if name else None
            if name and name not in projector.names:
                fail(f"unknown projection {name!r}; known: {', '.join(projector.names)}")
            head = services.store.head()
            with _bar() as bar:
                task = bar.add_task("rebuilding", total=head)
                read = projector.rebuild(names, lambda n: bar.advance(task, n))
                bar.update(task, completed=head)
        except (SQLAlchemyError, StoreError) as error:
            fail(
                f"rebuild in {services.settings.database.describe()} stopped ({brief(error)});"
                " every applied batch is kept with its position: run the rebuild again, or let"
                " a follower finish it"
            )
        except UnreadableLogEntry as error:
            fail(f"rebuild in {services.settings.database.describe()} stopped: {error}", code=1)
    out_console().print(
        f"rebuilt {', '.join(names or projector.names)}: {read} log entries applied"
    )


def _bar() -> AbstractContextManager[Progress]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console(),
    )


@projections_app.command("status")
def status() -> None:
    """Show each projection's position, the log head and the lag between them."""
    from sqlalchemy.exc import SQLAlchemyError

    from application.ports import StoreError
    from projections.base import ProjectionStatus
    from projections.runner import brief

    with opened() as services:
        where = services.settings.database.describe()
        projector = services.projector()
        try:
            missing = read_tables_missing(projector.engine)
            if missing:  # a read creates nothing: every projection is at 0
                err_console().print(
                    f"the read tables ({', '.join(missing)}) do not exist in {where}:"
                    " run `harness db init` once first"
                )
                head = services.store.head()
                rows = [ProjectionStatus(name, 0, head) for name in projector.names]
            else:
                rows = projector.status()
        except (SQLAlchemyError, StoreError) as error:
            fail(f"cannot read the projections' positions in {where}: {brief(error)}")
    table = Table("projection", "position", "head", "lag")
    for row in rows:
        table.add_row(row.name, str(row.position), str(row.head), str(row.lag))
    out_console().print(table)
