"""``harness otel export``: send runs' traces to an OpenTelemetry receiver (OTLP over HTTP).

The standard variables name the receiver (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
``OTEL_EXPORTER_OTLP_ENDPOINT`` plus ``/v1/traces``; headers, timeout and certificates too);
``--endpoint`` overrides them. Exporting again sends the same spans: their ids come from the log.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.text import Text

from cli.common import err_console, fail, opened, out_console
from cli.reads import lookup_run_id
from domain.redactor import shown_url

if TYPE_CHECKING:
    from uuid import UUID

    from application.store import HarnessStore
    from projections.otel_export import TraceExport

DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces"
"""Where the SDK sends traces when no variable names a receiver."""

otel_app = typer.Typer(
    help="Export runs as OpenTelemetry GenAI traces (OTLP over HTTP).", no_args_is_help=True
)


@otel_app.command("export")
def export(
    run_id: Annotated[
        str | None,
        typer.Argument(
            help="The run to export: its id or a unique prefix (or --all).", show_default=False
        ),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Every finished run (unfinished ones are skipped).")
    ] = False,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="The receiver's traces URL, e.g. http://localhost:4318/v1/traces (default:"
            " the OTEL_EXPORTER_OTLP_* variables).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Export one run's trace, or every finished run's, to an OTLP/HTTP receiver.

    A run that has not finished is exported as far as it went (export it again once it has);
    with --all it is skipped. Exit 1 when the receiver did not take the spans.
    """
    if (run_id is None) == (not every):
        fail("give one RUN_ID or --all")
    target = _target(endpoint)
    with opened() as services:
        run = lookup_run_id(services, run_id) if run_id is not None else None
        export = _export(services.store, target)
        try:
            if run is not None:
                _one(export, run, target)
            else:
                _every(export, target)
        finally:
            export.exporter.shutdown()


def _target(endpoint: str | None) -> str:
    """The receiver's URL: ``--endpoint``, else the variables', else the SDK's default."""
    from infrastructure.otlp import configured_endpoint
    from infrastructure.settings import ConfigurationError

    if endpoint is not None:
        if not endpoint.strip().startswith(("http://", "https://")):
            fail(f"--endpoint {shown_url(endpoint)!r} is not an http:// or https:// URL")
        return endpoint.strip()
    try:
        return configured_endpoint(os.environ) or DEFAULT_ENDPOINT
    except ConfigurationError as error:
        fail(f"invalid configuration: {error}")


def _export(store: HarnessStore, target: str) -> TraceExport:
    from infrastructure.otlp import otlp_exporter
    from projections.otel_export import TraceExport

    return TraceExport(store, otlp_exporter(target))


def _one(export: TraceExport, run_id: UUID, target: str) -> None:
    from domain.errors import UnknownAggregateError
    from projections.otel_export import ExportFailedError, read_run

    try:
        finished = read_run(export.store, run_id).finished
        sent = export.export(run_id)
    except UnknownAggregateError:
        fail(f"no run {run_id} exists")
    except ExportFailedError:
        _down(target)
    out_console().print(f"exported run {run_id}: {sent} spans")
    if not finished:
        err_console().print(
            f"note: run {run_id} has not finished: its trace so far was exported; export it"
            " again once it has"
        )


def _every(export: TraceExport, target: str) -> None:
    from projections.otel_export import ExportFailedError

    runs = spans = 0
    try:
        for _, run_id in export.finished_runs(0):
            spans += export.export(run_id) or 0
            runs += 1
    except ExportFailedError:
        _down(target, runs)
    out_console().print(f"exported {runs} runs: {spans} spans")
    if skipped := export.unfinished_count():
        err_console().print(f"note: skipped {skipped} unfinished runs")


def _down(where: str, done: int = 0) -> NoReturn:
    """The receiver did not take the spans: say so in one line, exit 1.

    The URL is shown without its ``user:password@`` and with every query value hidden.
    """
    sent = f" after {done} runs" if done else ""
    err_console().print(
        Text.assemble(
            ("error:", "bold red"),
            f" the OTLP receiver at {shown_url(where)} did not accept the trace{sent}"
            " (unreachable, refused or failing); nothing was lost: export again when it is up",
        )
    )
    raise typer.Exit(code=1)
