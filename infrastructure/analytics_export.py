"""``harness analytics export``: one Parquet or CSV file per ``analytics_*`` view, read through it.

Each file has the view's columns in the documented order and types (``docs/analytics.md``):
text, 64-bit integers, doubles, booleans, timestamps in UTC (microseconds) and ``day`` as a
date; an empty range writes files with the schema and no rows. Rows are those whose ``day``
lies in the range asked, in each view's key order. pyarrow writes the files: it is the
``analytics`` extra, imported only here, when an export runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import inspect, text

from infrastructure.analytics_schema import VIEWS, AnalyticsView, Kind

if TYPE_CHECKING:
    from pathlib import Path

    from sqlalchemy import Connection, Engine

Format = Literal["parquet", "csv"]
EXTRA = "pip install 'diagnosis-harness[analytics]'"


class MissingExtra(RuntimeError):
    """pyarrow is not installed (the ``analytics`` extra)."""


@dataclass(frozen=True)
class ExportedFile:
    """One file the export wrote: the view it holds, where, and how many rows."""

    view: str
    path: Path
    rows: int


def missing_views(engine: Engine) -> list[str]:
    """The analytics views the database lacks (made by an older version of the code)."""
    with engine.connect() as connection:
        present = set(inspect(connection).get_view_names())
    return [view.name for view in VIEWS if view.name not in present]


def export(
    engine: Engine, out: Path, file_format: Format, since: date, until: date
) -> list[ExportedFile]:
    """Write every view's rows of the days ``since`` to ``until`` (both included) into ``out``."""
    writer = _writer(file_format)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with engine.connect() as connection:
        for view in VIEWS:
            table = _read(connection, view, since, until)
            path = out / f"{view.name}.{file_format}"
            writer(table, str(path))
            written.append(ExportedFile(view.name, path, table.num_rows))
    return written


def arrow_schema(view: AnalyticsView) -> Any:
    """The pyarrow schema of ``view``'s file."""
    pa = _pyarrow()
    return pa.schema([pa.field(c.name, _ARROW[c.kind](pa)) for c in view.columns])


def _read(connection: Connection, view: AnalyticsView, since: date, until: date) -> Any:
    """The view's rows of the range as a pyarrow table of its schema."""
    pa = _pyarrow()
    names = [c.name for c in view.columns]
    found = connection.execute(
        text(
            f"SELECT {', '.join(names)} FROM {view.name}"
            " WHERE day >= :since AND day <= :until"
            f" ORDER BY {', '.join(view.order)}"
        ),
        {"since": since.isoformat(), "until": until.isoformat()},
    ).all()
    columns = list(zip(*found, strict=True)) if found else [() for _ in names]
    arrays = [
        pa.array(
            [_CONVERT[c.kind](v) if v is not None else None for v in values], _ARROW[c.kind](pa)
        )
        for c, values in zip(view.columns, columns, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=arrow_schema(view))


def _timestamp(value: Any) -> datetime:
    """A time as read: aware on PostgreSQL, ISO text in UTC on SQLite."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


_CONVERT: dict[Kind, Any] = {
    "text": str,
    "integer": int,
    "real": float,
    "boolean": bool,
    "timestamp": _timestamp,
    "day": date.fromisoformat,
}
_ARROW: dict[Kind, Any] = {
    "text": lambda pa: pa.string(),
    "integer": lambda pa: pa.int64(),
    "real": lambda pa: pa.float64(),
    "boolean": lambda pa: pa.bool_(),
    "timestamp": lambda pa: pa.timestamp("us", tz="UTC"),
    "day": lambda pa: pa.date32(),
}


def _writer(file_format: Format) -> Any:
    """The function that writes a pyarrow table to a path in ``file_format``."""
    _pyarrow()
    if file_format == "parquet":
        import pyarrow.parquet as pq

        return pq.write_table
    import pyarrow.csv as csv

    return csv.write_csv


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError as error:
        raise MissingExtra(f"the export needs pyarrow, which is not installed: {EXTRA}") from error
    return pyarrow
