"""The ``analytics_*`` SQL views: the read tables as analysts read them, alike on both stores.

Each view selects from one read table, names its columns for people and fixes their types: on
PostgreSQL each column is cast to its type, on SQLite (which has no time type) a timestamp is
ISO text in UTC. ``day`` is the UTC day as ``YYYY-MM-DD`` text on both. The views are created
with the read tables (``harness db init``), are part of the read schema's fingerprint, and are
what ``harness analytics export`` reads and what ``docs/analytics.md`` documents
(:func:`schema_markdown`). Nothing writes through them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import inspect

from infrastructure.analytics_schema import RUN_DAY, VIEWS, AnalyticsView, Kind, ViewColumn

if TYPE_CHECKING:
    from sqlalchemy import Connection

POSTGRES_TYPES: dict[Kind, str] = {
    "text": "TEXT",
    "integer": "BIGINT",
    "real": "DOUBLE PRECISION",
    "boolean": "BOOLEAN",
    "timestamp": "TIMESTAMPTZ",
    "day": "TEXT",
}
PREFIX = "analytics_"


def _expression(column: ViewColumn, dialect: str) -> str:
    if column.source == RUN_DAY:
        if dialect == "postgresql":
            return "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
        return "substr(created_at, 1, 10)"
    source = column.source or column.name
    if dialect == "postgresql":
        return f"CAST({source} AS {POSTGRES_TYPES[column.kind]})"
    return source


def view_sql(view: AnalyticsView, dialect: str) -> str:
    """The ``CREATE VIEW`` statement of ``view`` on ``dialect`` (``postgresql`` or ``sqlite``)."""
    selected = ", ".join(f"{_expression(c, dialect)} AS {c.name}" for c in view.columns)
    return f"CREATE VIEW {view.name} AS SELECT {selected} FROM {view.table}"


READ_ONLY = (
    "CREATE OR REPLACE FUNCTION analytics_read_only() RETURNS trigger LANGUAGE plpgsql AS"
    " $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', MESSAGE ="
    " 'the analytics views are read-only: ' || TG_OP || ' of ' || TG_TABLE_NAME; END $$"
)
"""PostgreSQL's one-table views with plain columns take writes; these refuse them (SQLite's
views never take any)."""


def _refusal(view: AnalyticsView) -> str:
    return (
        f"CREATE TRIGGER {view.name}_read_only INSTEAD OF INSERT OR UPDATE OR DELETE"
        f" ON {view.name} FOR EACH ROW EXECUTE FUNCTION analytics_read_only()"
    )


def views_text() -> str:
    """Every view's statements on both stores, for the read schema's fingerprint."""
    made = [view_sql(v, d) for v in VIEWS for d in ("postgresql", "sqlite")]
    return "\n".join([*made, READ_ONLY, *map(_refusal, VIEWS)])


def drop_views(connection: Connection) -> None:
    """Drop every ``analytics_*`` view there is (an older code's too), before its tables go."""
    for name in inspect(connection).get_view_names():
        if name.startswith(PREFIX):
            connection.exec_driver_sql(f'DROP VIEW IF EXISTS "{name}"')


def create_views(connection: Connection) -> None:
    """Create every analytics view (after the read tables), read-only on PostgreSQL too."""
    postgres = connection.dialect.name == "postgresql"
    if postgres:
        connection.exec_driver_sql(READ_ONLY)
    for view in VIEWS:
        connection.exec_driver_sql(view_sql(view, connection.dialect.name))
        if postgres:
            connection.exec_driver_sql(_refusal(view))


def schema_markdown() -> str:
    """Every view's columns as Markdown tables: name, type on each store, meaning."""
    lines: list[str] = []
    for view in VIEWS:
        lines += [f"### `{view.name}`", "", view.meaning, ""]
        lines += [
            "| column | type | PostgreSQL | SQLite | Parquet / CSV | meaning |",
            "|---|---|---|---|---|---|",
        ]
        for c in view.columns:
            sqlite = "text (ISO 8601, UTC)" if c.kind == "timestamp" else _SQLITE[c.kind]
            pg = POSTGRES_TYPES[c.kind].lower()
            file = _FILE[c.kind]
            lines.append(f"| `{c.name}` | {c.kind} | {pg} | {sqlite} | {file} | {c.meaning} |")
        lines.append("")
    return "\n".join(lines)


_SQLITE: dict[Kind, str] = {
    "text": "text",
    "integer": "integer",
    "real": "real",
    "boolean": "integer (0/1)",
    "day": "text",
    "timestamp": "text",
}
_FILE: dict[Kind, str] = {
    "text": "string",
    "integer": "int64",
    "real": "double",
    "boolean": "bool",
    "day": "date32 (YYYY-MM-DD)",
    "timestamp": "timestamp[us, UTC]",
}
