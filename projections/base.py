"""What every projection shares: the protocol, a per-batch row cache and JSON-safe payloads."""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import JSON, bindparam, select

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from sqlalchemy import Connection, Table

Positioned = tuple[int, Any]
"""A domain event with its log position."""

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

    def process(self, connection: Connection, events: Sequence[Positioned]) -> None:
        """Apply a batch of events (in log order) inside the caller's transaction."""
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
        column = self.table.c[self.key]
        for start in range(0, len(wanted), IN_CHUNK):
            chunk = wanted[start : start + IN_CHUNK]
            for k in chunk:
                self.rows[k] = None
            found = self.connection.execute(select(self.table).where(column.in_(chunk)))
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
        if new:
            insert_many(self.connection, self.table, new)
        if changed:
            update = self.table.update().where(self.table.c[self.key] == bindparam("_key"))
            self.connection.execute(update, [{**row, "_key": row[self.key]} for row in changed])
        self.original.update({k: dict(r) for k, r in self.rows.items() if r is not None})
        self.created.clear()


def _json_default(value: Any) -> Any:
    """What ``json`` cannot encode itself: enums by value, ids and times as text, value objects."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return str(value)  # UUIDs and anything else with a faithful text form


encode_json = json.JSONEncoder(default=_json_default, ensure_ascii=False).encode
"""Event payloads as JSON text: one pass, no intermediate copy, one encoder for all calls."""


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (enums by value, ids and times as text, tuples as lists)."""
    return json.loads(encode_json(value))


ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp"})


def payload(event: Any) -> dict[str, Any]:
    """An event's own fields (not its stream, version and time), for a JSON column."""
    return {k: v for k, v in vars(event).items() if k not in ENVELOPE}


uuid_text = functools.lru_cache(maxsize=65_536)(str)
"""``str(uuid)``, remembered: every projection names the same streams in every batch."""


def text(value: Enum | None) -> str | None:
    """An enum's value for a text column."""
    return None if value is None else str(value.value)


# -- bulk writes --------------------------------------------------------------------------------


def insert_many(connection: Connection, table: Table, rows: Sequence[Row]) -> None:
    """Insert ``rows`` with the driver's fastest bulk path.

    That is ``COPY`` on PostgreSQL and one ``executemany`` on SQLite. Values pass through the
    columns' own SQLAlchemy bind processing, except JSON, which :data:`encode_json` writes in one
    pass.
    """
    if not rows:
        return
    columns = [c.name for c in table.columns]
    convert = [(i, f) for i, f in enumerate(_converters(table, connection.dialect)) if f]
    pick = operator.itemgetter(*columns)
    values = []
    for row in rows:
        value = list(pick(row))
        for index, function in convert:
            value[index] = function(value[index])
        values.append(value)
    raw: Any = connection.connection.dbapi_connection
    if connection.dialect.name == "postgresql":
        names = ", ".join(f'"{c}"' for c in columns)
        with (
            raw.cursor() as cursor,
            cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as copy,
        ):
            for value in values:
                copy.write_row(value)
        return
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    cursor = raw.cursor()
    try:
        cursor.executemany(f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', values)
    finally:
        cursor.close()


def _json_text(value: Any) -> Any:
    return None if value is None else encode_json(value)


@functools.cache
def _converters_by_dialect(table: Table, dialect_name: str, dialect: Any) -> tuple[Any, ...]:
    converters: list[Any] = []
    for column in table.columns:
        if isinstance(column.type, JSON):
            converters.append(_json_text)
        elif dialect_name == "postgresql":
            converters.append(None)  # COPY adapts Python values itself
        else:
            # the dialect's own type (SQLite's DATETIME writes SQLAlchemy's text format)
            impl = column.type.dialect_impl(dialect)
            converters.append(impl.bind_processor(dialect))
    return tuple(converters)


def _converters(table: Table, dialect: Any) -> tuple[Any, ...]:
    return _converters_by_dialect(table, dialect.name, dialect)
