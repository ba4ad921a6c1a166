"""What every projection shares: the protocol, a per-batch row cache and JSON-safe payloads."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from sqlalchemy import bindparam, select

if TYPE_CHECKING:
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
            self.connection.execute(self.table.insert(), new)
        if changed:
            update = self.table.update().where(self.table.c[self.key] == bindparam("_key"))
            self.connection.execute(update, [{**row, "_key": row[self.key]} for row in changed])
        self.original.update({k: dict(r) for k, r in self.rows.items() if r is not None})
        self.created.clear()


def jsonable(value: Any) -> Any:
    """Payload values as plain JSON: enums by value, ids and times as text, tuples as lists."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp"})


def payload(event: Any) -> dict[str, Any]:
    """An event's own fields (not its stream, version and time) as JSON."""
    return {k: jsonable(v) for k, v in vars(event).items() if k not in ENVELOPE}


def text(value: Enum | None) -> str | None:
    """An enum's value for a text column."""
    return None if value is None else str(value.value)
