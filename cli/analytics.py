"""``harness analytics export``: the analytics views as Parquet or CSV files (docs/analytics.md).

The read tables are first brought up to the log head, as every CLI read does; then one file
per ``analytics_*`` view is written through the view. What was written goes to stdout, one line
per file; bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path  # noqa: TC003 (typer reads the options' annotations at runtime)
from typing import TYPE_CHECKING, Annotated, cast

import typer

from cli.common import fail, load_settings, opened, out_console

if TYPE_CHECKING:
    from bootstrap.composition import Services
    from infrastructure.analytics_export import Format
    from infrastructure.settings import Settings

analytics_app = typer.Typer(
    help="Export the analytics views (runs, tool and model calls, guard decisions, citations,"
    " daily aggregates) as Parquet or CSV files for DuckDB, pandas or a notebook.",
    no_args_is_help=True,
)
FORMATS = ("parquet", "csv")


@analytics_app.command("export")
def export_command(
    since: Annotated[str, typer.Option("--since", help="First UTC day, YYYY-MM-DD.")],
    out: Annotated[
        Path, typer.Option("--out", help="The folder to write into (made when missing).")
    ],
    file_format: Annotated[
        str, typer.Option("--format", help="parquet (default) or csv.")
    ] = "parquet",
    until: Annotated[
        str | None, typer.Option("--until", help="Last UTC day, included (default: today).")
    ] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", help="A database URL to read instead of HARNESS_DATABASE_URL."),
    ] = None,
) -> None:
    """Write one file per analytics view, with the rows of the days asked (docs/analytics.md).

    Rows are chosen by their `day` (UTC): a run by the day it started, a tool call by the day it
    ended, any other fact by the day of its event, an aggregate by its day. A range with no row
    writes files with the columns and no rows. Example:
    `harness analytics export --since 2026-11-01 --out ./analytics`.
    """
    from infrastructure.analytics_export import MissingExtra, export

    first, last, chosen = _checked(since, until, file_format, out)
    with opened(_settings(db)) as services:
        _ready(services)
        try:
            written = export(services.engine, out, chosen, first, last)
        except MissingExtra as error:
            fail(str(error))
        except OSError as error:
            fail(f"cannot write into {out}: {error.strerror or error}")
    for file in written:
        out_console().print(f"wrote {file.path}: {file.rows} rows of {file.view}")


def _checked(
    since: str, until: str | None, file_format: str, out: Path
) -> tuple[date, date, Format]:
    """The days and format asked, checked (exit 2 naming what is wrong)."""
    first, last = _day("--since", since), _day("--until", until) if until else _today()
    if file_format not in FORMATS:
        fail(f"--format {file_format!r} is not one of {', '.join(FORMATS)}")
    if first > last:
        fail(f"--since {first} is after --until {last}: no day lies between them")
    if out.exists() and not out.is_dir():
        fail(f"--out {out} is a file: give a folder to write the files into")
    return first, last, cast("Format", file_format)


def _day(option: str, value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        fail(f"{option} {value!r} is not a day: give it as YYYY-MM-DD (UTC)")


def _today() -> date:
    return datetime.now(UTC).date()


def _settings(db: str | None) -> Settings:
    """The configured settings, reading the database ``--db`` names when given."""
    from infrastructure.settings import parse_database_url

    settings = load_settings()
    if db is None:
        return settings
    try:
        parse_database_url(db)
    except ValueError as error:
        fail(f"--db: {error}")
    return settings.model_copy(update={"database_url": db})


def _ready(services: Services) -> None:
    """Bring the read tables up to the log head; exit 2 unless the views exist."""
    from cli.reads import bring_up_to_date
    from infrastructure.analytics_export import missing_views

    bring_up_to_date(services)
    missing = missing_views(services.engine)
    if missing:
        where = services.settings.database.describe()
        fail(
            f"the analytics views ({', '.join(missing)}) do not exist in {where}:"
            " run `harness db init` (it recreates the read tables), then"
            " `harness projections rebuild`"
        )
