"""What every projection shares: the protocol, a per-batch row cache and JSON-safe payloads."""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Integer,
    String,
    bindparam,
    select,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from uuid import UUID

    from eventsourcing.persistence import Mapper, Notification
    from sqlalchemy import Connection, Select, Table

Positioned = tuple[int, Any, str]
"""A domain event with its log position and its stream's id as text."""

Row = dict[str, Any]

IN_CHUNK = 500
"""Keys per ``IN (...)`` list when a batch preloads rows."""


class Projection(Protocol):
    """A read model built from the log; ``process`` must only write through ``connection``."""

    @property
    def name(self) -> str:
        """The name of its tracking row."""
        ...

    @property
    def tables(self) -> tuple[Table, ...]:
        """The tables it owns: emptied when it is rebuilt from position 0."""
        ...

    @property
    def interests(self) -> tuple[type, ...]:
        """The event classes it reads (subclasses included); other events only move its position."""
        ...

    def process(self, connection: Connection, events: Sequence[Positioned]) -> None:
        """Apply a batch of its events of interest (in log order) in the caller's transaction."""
        ...


class RowCache:
    """The rows one batch touches, keyed by their primary key, written back once at the end.

    Rows are read at most once per batch (``preload`` does it in a few queries) and changed as
    plain dicts; ``flush`` inserts the new ones and updates the changed ones with one
    ``executemany`` each, which is what makes a batch cheap compared to an event at a time.
    """

    def __init__(self, connection: Connection, table: Table, key: str) -> None:
        """Cache rows of ``table`` keyed by column ``key``."""
        self.connection = connection
        self.table = table
        self.key = key
        self.rows: dict[Any, Row | None] = {}
        self.original: dict[Any, Row] = {}
        self.created: set[Any] = set()

    def preload(self, keys: Iterable[Any]) -> None:
        """Read the stored rows of ``keys`` not yet cached; missing ones are remembered as None."""
        wanted = [k for k in dict.fromkeys(keys) if k not in self.rows]
        query = _select_by_keys(self.table, self.key)
        for start in range(0, len(wanted), IN_CHUNK):
            chunk = wanted[start : start + IN_CHUNK]
            for k in chunk:
                self.rows[k] = None
            found = self.connection.execute(query, {"keys": chunk})
            for mapping in found.mappings():
                row = dict(mapping)
                self.rows[row[self.key]] = row
                self.original[row[self.key]] = dict(row)

    def get(self, key: Any) -> Row | None:
        """The row, read from the database on first use; None when there is none."""
        if key not in self.rows:
            self.preload([key])
        return self.rows[key]

    def add(self, row: Row) -> Row:
        """A new row (inserted at flush); returns it for further changes."""
        key = row[self.key]
        self.rows[key] = row
        self.created.add(key)
        return row

    def flush(self) -> None:
        """Insert the new rows and update the changed ones."""
        new = [row for key in self.created if (row := self.rows[key]) is not None]
        changed = [
            row
            for key, row in self.rows.items()
            if row is not None and key not in self.created and row != self.original.get(key)
        ]
        insert_many(self.connection, self.table, new)
        update_many(self.connection, self.table, self.key, changed)
        self.original.update({k: dict(r) for k, r in self.rows.items() if r is not None})
        self.created.clear()


@functools.cache
def _select_by_keys(table: Table, key: str) -> Select[Any]:
    """``SELECT * FROM table WHERE key IN (:keys)``, built once (the list is bound at execution)."""
    return select(table).where(table.c[key].in_(bindparam("keys", expanding=True)))


def _json_default(value: Any) -> Any:
    """What the encoder cannot write itself: sets (sorted), anything else by its text form."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return str(value)  # UUIDs, decimals and anything else with a faithful text form


_slow_encode = json.JSONEncoder(default=_json_default, ensure_ascii=False).encode
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS


def encode_json(value: Any) -> str:
    """``value`` as JSON text: enums by value, ids and times as text, value objects as objects.

    orjson writes enums, UUIDs, datetimes (ISO 8601), dataclasses and tuples itself, in one pass;
    the standard encoder, with the same conventions, takes what orjson refuses (integers beyond
    64 bits).
    """
    try:
        return orjson.dumps(value, default=_json_default, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:
        return _slow_encode(value)


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (enums by value, ids and times as text, tuples as lists)."""
    return orjson.loads(encode_json(value))


def payload(event: Any) -> dict[str, Any]:
    """An event's own fields (not its stream, version and time), for a JSON column."""
    fields = dict(vars(event))
    fields.pop("originator_id", None)
    fields.pop("originator_version", None)
    fields.pop("timestamp", None)
    return fields


def positioned(mapper: Mapper[UUID], notifications: Iterable[Notification]) -> list[Positioned]:
    """Log entries as :data:`Positioned` events, deserialised once for every projection."""
    to_domain_event = mapper.to_domain_event
    return [(n.id, to_domain_event(n), str(n.originator_id)) for n in notifications]


uuid_text = functools.lru_cache(maxsize=65_536)(str)
"""``str(uuid)``, remembered: every projection names the same streams in every batch."""


def text(value: Enum | None) -> str | None:
    """An enum's value for a text column."""
    return None if value is None else str(value.value)


# -- bulk writes --------------------------------------------------------------------------------


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
    if not values:
        return
    _convert(connection, table, columns, values)
    raw: Any = connection.connection.dbapi_connection
    names = ", ".join(f'"{c}"' for c in columns)
    if connection.dialect.name == "postgresql":
        with (
            raw.cursor() as cursor,
            cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN (FORMAT BINARY)') as copy,
        ):
            copy.set_types([_copy_type(table.c[name].type) for name in columns])
            for value in values:
                copy.write_row(value)
        return
    marks = ", ".join("?" for _ in columns)
    _executemany(raw, f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', values)


def update_many(connection: Connection, table: Table, key: str, rows: Sequence[Row]) -> None:
    """Rewrite every column of ``rows`` (dicts with every column), matched on column ``key``."""
    if not rows:
        return
    columns = tuple(c.name for c in table.columns if c.name != key)
    pick = operator.itemgetter(*columns, key)
    values = [list(pick(row)) for row in rows]
    _convert(connection, table, (*columns, key), values)
    mark = "%s" if connection.dialect.name == "postgresql" else "?"
    assignments = ", ".join(f'"{c}" = {mark}' for c in columns)
    statement = f'UPDATE "{table.name}" SET {assignments} WHERE "{key}" = {mark}'
    _executemany(connection.connection.dbapi_connection, statement, values)


def driver_query(connection: Connection, statement: str, params: Sequence[Any]) -> list[Any]:
    """Run ``statement`` (with ``?`` placeholders) on the driver's connection; its rows, if any.

    For the few statements a batch builds by the dozen, where composing SQLAlchemy expressions
    would cost more than running them.
    """
    if connection.dialect.name == "postgresql":
        statement = statement.replace("?", "%s")
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(statement, params)
        return list(cursor.fetchall()) if cursor.description else []
    finally:
        cursor.close()


def _executemany(raw: Any, statement: str, values: list[list[Any]]) -> None:
    cursor = raw.cursor()
    try:
        cursor.executemany(statement, values)
    finally:
        cursor.close()


def _convert(
    connection: Connection, table: Table, columns: Sequence[str], values: list[list[Any]]
) -> None:
    converters = _converters(table, connection.dialect.name, connection.dialect)
    convert = [(i, f) for i, name in enumerate(columns) if (f := converters[name])]
    if not convert:
        return
    for value in values:
        for index, function in convert:
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
    return value.isoformat(" ", "microseconds")[:26]  # the zone, if any, is cut off


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
