"""The ``harness`` command line: serve the API and manage the event store.

Imports of the web and database stacks happen inside the commands, so ``harness --help`` and
bad input answer at once. No traceback reaches a user: an unexpected error is one line on
stderr (exit 1); ``--debug`` or ``HARNESS_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated
from uuid import UUID

import typer

from cli.analytics import analytics_app
from cli.app import HarnessTyper
from cli.audit import audit_app
from cli.common import fail, load_settings, opened, out_console, settings_for_work
from cli.eval_history import add_history_commands
from cli.eval_import import add_import_command
from cli.evals import eval_app
from cli.mcp import mcp_app
from cli.model import model_app
from cli.otel import otel_app
from cli.projections import projections_app
from cli.reads import bring_up_to_date
from cli.runs import runs_app
from cli.tools import tools_app

if TYPE_CHECKING:
    from bootstrap.composition import Services
    from infrastructure.settings import Settings

app = HarnessTyper(
    help="Diagnosis Harness: an event-sourced backend for operational-diagnosis agents.\n\n"
    "Configuration comes from HARNESS_* environment variables (see the README); with none set,"
    " everything runs on the SQLite file ./harness.db.",
)
db_app = typer.Typer(help="Create and inspect the event store.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(projections_app, name="projections")
app.add_typer(runs_app, name="runs")
app.add_typer(audit_app, name="audit")
app.add_typer(otel_app, name="otel")
app.add_typer(mcp_app, name="mcp")
app.add_typer(tools_app, name="tools")
app.add_typer(model_app, name="model")
app.add_typer(analytics_app, name="analytics")
add_import_command(eval_app)  # harness eval import-holmes
add_history_commands(eval_app)  # harness eval list, harness eval compare
app.add_typer(eval_app, name="eval")


@db_app.command("init")
def db_init(
    sample: Annotated[
        bool, typer.Option("--sample", help="Also load the sample operations data and runbooks.")
    ] = False,
) -> None:
    """Create the event store tables once (safe to run again); run it before starting workers."""
    from bootstrap.composition import load_sample_data

    with opened(create=True) as services:
        where = services.settings.database.describe()
        out_console().print(f"event store ready: {where}, log head at {services.store.head()}")
        if sample:
            counts = load_sample_data(services)
            out_console().print(
                "sample data loaded: " + ", ".join(f"{k} {v}" for k, v in counts.items())
            )


@db_app.command("status")
def db_status() -> None:
    """Show which store is configured and its last log position (never creates one)."""
    with opened() as services:
        head = services.store.head()
    out_console().print(f"{services.settings.database.describe()}: log head at {head}")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (HARNESS_HOST).")] = None,
    port: Annotated[
        int | None, typer.Option(min=0, max=65535, help="Port (HARNESS_PORT); 0: any free one.")
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Worker processes (PostgreSQL only); the projections then run in a process"
            " of their own, started and restarted by this command.",
        ),
    ] = 1,
) -> None:
    """Run the HTTP service (Ctrl-C stops it).

    On the SQLite default, tables and sample data are set up first and one worker serves,
    with the projections in its process. Without HARNESS_API_KEYS it only binds to loopback.
    """
    from cli.serve import check_bind, check_port, serve_many, serve_one

    settings = load_settings()
    bind_host, bind_port = host or settings.host, settings.port if port is None else port
    check_bind(settings, bind_host, workers)
    listening = check_port(bind_host, bind_port)  # before any set-up: a taken port says so first
    settings_for_work(announce=workers > 1)  # one worker says it as it starts
    if workers > 1:
        serve_many(settings, listening, workers)  # each worker opens its own store
        return
    serve_one(settings, listening)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="What to ask, e.g. 'Why was checkout slow?'")],
    session: Annotated[
        str | None,
        typer.Option(
            help="Session id for follow-up questions: a question carries the session's previous"
            " diagnosis, as over the API (without it: session 'cli', nothing carried)."
        ),
    ] = None,
) -> None:
    """Ask one question and watch the run: its phases as they happen, then the answer.

    Uses HARNESS_MODEL (the offline model by default) over the sample data. Exits 0 when content
    was published (a diagnosis, an answer or a safe fallback), 1 when the run failed and 2 for
    bad input.
    """
    from domain.values import query_problem, session_problem

    settings = load_settings()
    problem = query_problem(question, settings.max_query_chars)
    if problem:
        fail(f"the question {problem}")
    if session is not None and (problem := session_problem(session)):
        fail(f"--session {session!r} {problem}")
    code = _ask(settings, question, session)
    raise typer.Exit(code=code)


def _ask(settings: Settings, question: str, session: str | None) -> int:
    from api.auth import LOCAL
    from cli.ask_view import AskView
    from infrastructure.settings import ConfigurationError

    embedded = settings.database.kind == "sqlite"
    view = AskView(out_console())
    with opened(settings, create=embedded, sample=embedded) as services:
        try:
            service = services.chat
        except ConfigurationError as error:
            fail(str(error))
        previous = None if session is None else _last_turn(services, session)
        services.store.listeners.append(view.on_events)
        result = service.ask(session or "cli", question, previous_run=previous, owner=LOCAL)
    view.show_result(result)
    return 0 if result.content is not None else 1


def _last_turn(services: Services, session: str) -> UUID | None:
    """The session's latest run, from the read tables brought up to the log head."""
    from projections.queries import last_turn_run

    bring_up_to_date(services)
    with services.engine.connect() as connection:
        found = last_turn_run(connection, session)
    return None if found is None else UUID(found)
