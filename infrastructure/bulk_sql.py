"""Bulk writes to the read tables through the driver: ``COPY`` on PostgreSQL, ``executemany``.

A batch writes hundreds of rows per table; composing SQLAlchemy statements per row would cost
more than the writing. Values pass through each column's own storage format (:func:`_converters`)
so SQLAlchemy reads them back as it would have written them.
"""

from __future__ import annotations

import functools
import operator
import sqlite3
from typing import TYPE_CHECKING, Any, Literal

import psycopg
from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Float, Integer, String

from application.view_port import encode_json

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from sqlalchemy import Connection, Table

    from application.view_port import Row


FEW_ROWS = 50
"""PostgreSQL: up to this many rows are inserted by one ``INSERT … VALUES``, more by ``COPY``."""


def insert_many(connection: Connection, table: Table, rows: Sequence[Row]) -> None:
    """Insert ``rows`` (dicts with every column of ``table``) with the driver's bulk path."""
    if not rows:
        return
    columns = tuple(c.name for c in table.columns)
    pick = operator.itemgetter(*columns)
    insert_values(connection, table, columns, [list(pick(row)) for row in rows])


def insert_values(
    connection: Connection, table: Table, columns: Sequence[str], values: list[list[Any]]
) -> None:
    """Insert rows given as value lists in the order of ``columns``, with the driver's bulk path.

    That is ``COPY`` on PostgreSQL and one ``executemany`` on SQLite. Values pass through the
    columns' own storage format (see :func:`_converters`); the lists are converted in place.
    """
    convert_values(connection, table, columns, values)
    write_values(connection, table, columns, values)


def write_values(
    connection: Connection,
    table: Table,
    columns: Sequence[str],
    values: list[list[Any]],
    statements: Literal["one a row", "few"] = "one a row",
) -> None:
    """Insert value lists already converted (:func:`convert_values`) with the driver's bulk path.

    PostgreSQL: one ``INSERT`` for a few rows, else ``COPY``. SQLite: one ``executemany``, or,
    for ``statements="few"``, multi-row ``INSERT``s of as many rows as SQLite takes parameters:
    the driver then lets go of the interpreter's lock a few times instead of once a row, so that
    another thread of the process (the one reading the next batch) is not held up meanwhile.
    """
    if not values:
        return
    raw: Any = connection.connection.dbapi_connection
    names = ", ".join(f'"{c}"' for c in columns)
    if connection.dialect.name == "postgresql":
        _postgres_insert(raw, table, names, columns, values)
    elif statements == "few":
        per = max(1, raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(columns))
        row = "(" + ", ".join("?" * len(columns)) + ")"
        for start in range(0, len(values), per):
            chunk = values[start : start + per]
            listed = ", ".join([row] * len(chunk))
            raw.execute(f'INSERT INTO "{table.name}" ({names}) VALUES {listed}', _flat(chunk))
    else:
        marks = ", ".join("?" for _ in columns)
        _executemany(raw, f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', values)


def _postgres_insert(
    raw: Any, table: Table, names: str, columns: Sequence[str], values: list[list[Any]]
) -> None:
    if len(values) <= FEW_ROWS:  # a live batch's few rows: one round trip (a COPY takes two)
        statement = _numbered(_rows_insert(table.name, names, len(columns), len(values)))
        with psycopg.RawCursor(raw) as cursor:
            cursor.execute(statement, _flat(values))
        return
    with (
        raw.cursor() as cursor,
        cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN (FORMAT BINARY)') as copy,
    ):
        copy.set_types([_copy_type(table.c[name].type) for name in columns])
        for value in values:
            copy.write_row(value)


@functools.lru_cache(maxsize=256)
def _rows_insert(table: str, names: str, width: int, rows: int) -> str:
    """``INSERT INTO table (names) VALUES`` ``rows`` rows of ``width`` ``?`` placeholders."""
    row = "(" + ", ".join("?" * width) + ")"
    return f'INSERT INTO "{table}" ({names}) VALUES ' + ", ".join([row] * rows)


@functools.lru_cache(maxsize=1024)
def _numbered(statement: str) -> str:
    """``statement`` with its ``?`` placeholders as PostgreSQL's own ``$1``, ``$2``, ….

    Such a statement goes through psycopg's ``RawCursor`` as it is. With ``%s`` placeholders
    psycopg parses the text on every execution once it has more than 50 parameters (it caches
    only smaller ones): a 20-row ``INSERT`` took 0.8 ms of CPU that way, 0.17 ms raw.
    Our statements hold no ``?`` but their placeholders (no literals, no JSON operators).
    """
    parts = statement.split("?")
    return parts[0] + "".join(f"${n}{part}" for n, part in enumerate(parts[1:], 1))


def _flat(values: list[list[Any]]) -> list[Any]:
    return [value for each in values for value in each]


def update_many(connection: Connection, table: Table, key: str, rows: Sequence[Row]) -> None:
    """Rewrite every column of ``rows`` (dicts with every column), matched on column ``key``."""
    if not rows:
        return
    columns = tuple(c.name for c in table.columns if c.name != key)
    pick = operator.itemgetter(*columns, key)
    values = [list(pick(row)) for row in rows]
    convert_values(connection, table, (*columns, key), values)
    mark = "%s" if connection.dialect.name == "postgresql" else "?"
    assignments = ", ".join(f'"{c}" = {mark}' for c in columns)
    statement = f'UPDATE "{table.name}" SET {assignments} WHERE "{key}" = {mark}'
    _executemany(connection.connection.dbapi_connection, statement, values)


def driver_query(connection: Connection, statement: str, params: Sequence[Any]) -> list[Any]:
    """Run ``statement`` (with ``?`` placeholders) on the driver's connection; its rows, if any.

    For the few statements a batch builds by the dozen, where composing SQLAlchemy expressions
    would cost more than running them.
    """
    raw: Any = connection.connection.dbapi_connection
    if connection.dialect.name == "postgresql":
        cursor = psycopg.RawCursor(raw)
        statement = _numbered(statement)
    else:
        cursor = raw.cursor()
    try:
        cursor.execute(statement, params)
        return list(cursor.fetchall()) if cursor.description else []
    finally:
        cursor.close()


def _executemany(raw: Any, statement: str, values: list[list[Any]]) -> None:
    cursor = raw.cursor()
    try:
        if len(values) == 1:  # psycopg's executemany opens a pipeline: more work for one row
            cursor.execute(statement, values[0])
        else:
            cursor.executemany(statement, values)
    finally:
        cursor.close()


def convert_values(
    connection: Connection, table: Table, columns: Sequence[str], values: list[list[Any]]
) -> None:
    """Turn value lists (in ``columns`` order) into what the driver stores, in place."""
    converters = _converters(table, connection.dialect.name, connection.dialect)
    convert = [(i, f) for i, name in enumerate(columns) if (f := converters[name])]
    if not convert:
        return
    for index, function in convert:  # a column at a time: one loop of calls each
        for value in values:
            value[index] = function(value[index])


def _copy_type(column_type: Any) -> str:
    """The PostgreSQL type a binary ``COPY`` sends a column's values as.

    JSON goes as text: our JSON is already encoded, and text is the binary form of ``json``.
    """
    if isinstance(column_type, DateTime):
        return "timestamptz" if column_type.timezone else "timestamp"
    for kind, name in _COPY_TYPES:
        if isinstance(column_type, kind):
            return name
    raise TypeError(f"no binary COPY type for {column_type!r}")


_COPY_TYPES = (
    (BigInteger, "int8"),
    (Integer, "int4"),
    (Float, "float8"),
    (Boolean, "bool"),
    (JSON, "text"),
    (String, "text"),
)


def _json_text(value: Any) -> Any:
    return None if value is None else encode_json(value)


def sqlite_datetime(value: datetime | None) -> str | None:
    """SQLAlchemy's SQLite ``DATETIME`` storage format (its fields, the zone dropped), faster."""
    if value is None:
        return None
    return _SQLITE_DATETIME % (  # the zone, if any, is left out
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
    )


_SQLITE_DATETIME = "%04d-%02d-%02d %02d:%02d:%02d.%06d"
"""The format of SQLAlchemy's SQLite ``DATETIME`` (``isoformat`` takes a third longer)."""


@functools.cache
def _converters(table: Table, dialect_name: str, dialect: Any) -> dict[str, Any]:
    """Per column, the function that turns a Python value into what the driver stores, or None.

    JSON is written by :func:`encode_json` on both databases. On PostgreSQL, ``COPY`` and psycopg
    adapt everything else themselves; on SQLite, date-times are written in SQLAlchemy's own
    format (so its DateTime type reads them back) and other types by their bind processor.
    """
    converters: dict[str, Any] = {}
    for column in table.columns:
        if isinstance(column.type, JSON):
            converters[column.name] = _json_text
        elif dialect_name == "postgresql":
            converters[column.name] = None
        elif isinstance(column.type, DateTime):
            converters[column.name] = sqlite_datetime
        else:
            converters[column.name] = column.type.dialect_impl(dialect).bind_processor(dialect)
    return converters
