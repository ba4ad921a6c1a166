"""The ``harness`` command line: serve the API and manage the event store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console

from application.store import HarnessStore, StoreError
from infrastructure.eventstore import init_store, open_store
from infrastructure.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Callable

app = typer.Typer(
    help="Diagnosis Harness: an event-sourced backend for operational-diagnosis agents.\n\n"
    "Configuration comes from HARNESS_* environment variables (see the README); with none set,"
    " everything runs on the SQLite file ./harness.db.",
    no_args_is_help=True,
    add_completion=False,
)
db_app = typer.Typer(help="Create and inspect the event store.", no_args_is_help=True)
app.add_typer(db_app, name="db")
console = Console(stderr=True)


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as error:
        problems = "; ".join(
            f"HARNESS_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            for e in error.errors()
        )
        _fail(f"invalid configuration: {problems}")


def _fail(message: str) -> NoReturn:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


def _head(settings: Settings, opener: Callable[[Settings], HarnessStore]) -> int:
    """Open the store with ``opener``, read the log head and close it; exit 2 on failure."""
    try:
        store = opener(settings)
        try:
            return store.head()
        finally:
            store.close()
    except StoreError as error:
        _fail(str(error))


@db_app.command("init")
def db_init() -> None:
    """Create the event store tables once (safe to run again); run it before starting workers."""
    settings = _settings()
    head = _head(settings, init_store)
    console.print(f"event store ready: {settings.database.describe()}, log head at {head}")


@db_app.command("status")
def db_status() -> None:
    """Show which store is configured and its last log position."""
    settings = _settings()
    head = _head(settings, open_store)
    typer.echo(f"{settings.database.describe()}: log head at {head}")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (HARNESS_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (HARNESS_PORT).")] = None,
) -> None:
    """Run the HTTP service. On the SQLite default the tables are created on first start."""
    import uvicorn

    from api.main import create_app

    settings = _settings()
    try:
        # An embedded SQLite file has one owner: creating its tables here is the zero set-up path.
        # PostgreSQL workers never create tables (several starting at once would race).
        opener = init_store if settings.database.kind == "sqlite" else open_store
        store = opener(settings)
    except StoreError as error:
        _fail(str(error))
    bind_host = host or settings.host
    console.print(
        f"serving on http://{bind_host}:{port or settings.port} ({settings.database.describe()})"
    )
    uvicorn.run(create_app(settings, store), host=bind_host, port=port or settings.port)
    store.close()
