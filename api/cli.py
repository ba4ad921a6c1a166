"""The ``harness`` command line: serve the API and manage the event store.

Imports of the web and database stacks happen inside the commands, so ``harness --help`` and
bad input answer at once. No traceback reaches a user: an unexpected error is one line on
stderr (exit 1); ``--debug`` or ``HARNESS_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from api.cli_app import HarnessTyper
from api.cli_audit import audit_app
from api.cli_common import fail, load_settings, out_console
from api.cli_projections import projections_app
from api.cli_runs import runs_app

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.store import HarnessStore
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


def _head(settings: Settings, opener: Callable[[Settings], HarnessStore]) -> int:
    """Open the store with ``opener``, read the log head and close it; exit 2 on failure."""
    from application.store import StoreError

    try:
        store = opener(settings)
        try:
            return store.head()
        finally:
            store.close()
    except StoreError as error:
        fail(str(error))


@db_app.command("init")
def db_init(
    sample: Annotated[
        bool, typer.Option("--sample", help="Also load the sample operations data and runbooks.")
    ] = False,
) -> None:
    """Create the event store tables once (safe to run again); run it before starting workers."""
    from infrastructure.eventstore import init_store

    settings = load_settings()
    head = _head(settings, init_store)
    _init_read_side(settings)
    out_console().print(f"event store ready: {settings.database.describe()}, log head at {head}")
    if sample:
        counts = _load_sample(settings)
        out_console().print(
            "sample data loaded: " + ", ".join(f"{k} {v}" for k, v in counts.items())
        )


def _init_read_side(settings: Settings) -> None:
    from sqlalchemy.exc import SQLAlchemyError

    from infrastructure.database import create_sql_engine
    from infrastructure.leases import SqlLeases
    from infrastructure.read_tables import create_read_tables
    from projections.runner import brief

    engine = create_sql_engine(settings)
    try:
        create_read_tables(engine)
        SqlLeases(engine).create()  # so workers never need to (they only check it exists)
    except SQLAlchemyError as error:
        fail(f"cannot create the read tables in {settings.database.describe()}: {brief(error)}")
    finally:
        engine.dispose()


def _load_sample(settings: Settings) -> dict[str, int]:
    from sqlalchemy.exc import SQLAlchemyError

    from infrastructure.composition import load_sample_data
    from projections.runner import brief

    try:
        return load_sample_data(settings)
    except (SQLAlchemyError, OSError) as error:
        fail(f"cannot load the sample data into {settings.database.describe()}: {brief(error)}")


@db_app.command("status")
def db_status() -> None:
    """Show which store is configured and its last log position (never creates one)."""
    from infrastructure.eventstore import open_store

    settings = load_settings()
    head = _head(settings, open_store)
    out_console().print(f"{settings.database.describe()}: log head at {head}")


def _open_for_work(settings: Settings) -> HarnessStore:
    """The store for serving or asking.

    An embedded SQLite file has one owner, so creating its tables and loading the sample data
    here is the zero set-up path. PostgreSQL workers never create tables (several starting at
    once would race): run `harness db init --sample` once first.
    """
    from application.store import StoreError
    from infrastructure.eventstore import init_store, open_store

    try:
        if settings.database.kind != "sqlite":
            return open_store(settings)
        store = init_store(settings)
    except StoreError as error:
        fail(str(error))
    _init_read_side(settings)
    _load_sample(settings)
    return store


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (HARNESS_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (HARNESS_PORT).")] = None,
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
    from api.cli_serve import check_bind, check_port, serve_many, serve_one

    settings = load_settings()
    bind_host, bind_port = host or settings.host, port or settings.port
    check_bind(settings, bind_host, workers)
    listening = check_port(bind_host, bind_port)  # before any set-up: a taken port says so first
    store = _open_for_work(settings)
    if workers > 1:
        store.close()  # each worker opens its own
        serve_many(settings, listening, workers)
        return
    try:
        serve_one(settings, store, listening)
    finally:
        store.close()


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="What to ask, e.g. 'Why was checkout slow?'")],
    session: Annotated[str, typer.Option(help="Session id for follow-up questions.")] = "cli",
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
    if problem := session_problem(session):
        fail(f"--session {session!r} {problem}")
    code = _ask(settings, question, session)
    raise typer.Exit(code=code)


def _ask(settings: Settings, question: str, session: str) -> int:
    from api.ask_view import AskView
    from api.auth import LOCAL
    from infrastructure.composition import build_runtime
    from infrastructure.settings import ConfigurationError

    store = _open_for_work(settings)
    try:
        runtime = build_runtime(settings, store)
    except ConfigurationError as error:
        store.close()
        fail(str(error))
    view = AskView(out_console())
    store.listeners.append(view.on_events)
    try:
        result = runtime.service.ask(session, question, owner=LOCAL)
    finally:
        runtime.close()
        store.close()
    view.show_result(result)
    return 0 if result.content is not None else 1
