"""The read side's port: what a projection writes through, and the JSON form of its values.

Projections decide, infrastructure writes (eventsourcing's ``examples/ftsprojection``: the
projection maps events to rows, a view interface writes them). Where each part lives:

* here, in ``application``: :class:`ViewWriter` and :class:`RowCache`, the protocols every
  projection is written against, naming tables and columns by name; and :func:`encode_json`,
  the JSON form of row values, which the writer stores, projections keep values in
  (:func:`jsonable`) and the API streams. No SQLAlchemy here (ruff bans it in this layer).
* ``infrastructure.read_tables``: the table definitions; ``infrastructure.view_writer`` and
  ``infrastructure.bulk_sql``: the SQL implementation (row caches, ``COPY`` / ``executemany``,
  the tracking rows).
* ``projections``: one module per projection, from events to rows through a :class:`ViewWriter`
  (they import neither SQLAlchemy nor infrastructure); the runner joins the two, building the
  SQL writer of each transaction, so ``projections`` sits above ``infrastructure``, below ``api``.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

import orjson

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence

Row = dict[str, Any]
"""One row of a read table: every column by name."""


class RowCache(Protocol):
    """The rows of one table that one batch touches, by key; written back once by ``flush``.

    Rows are read at most once per batch and changed in place as plain dicts.
    """

    def preload(self, keys: Iterable[Any]) -> None:
        """Read the stored rows of ``keys`` not yet cached, in a few queries."""
        ...

    def get(self, key: Any) -> Row | None:
        """The row of ``key`` (read on first use); None when there is none."""
        ...

    def add(self, row: Row) -> Row:
        """A new row, inserted at ``flush``; returns it for further changes."""
        ...

    def find(self, column: str, value: Any) -> Row | None:
        """A row whose ``column`` holds ``value``: a cached one first, else a stored one."""
        ...

    def drop(self, key: Any) -> bool:
        """Forget the row of ``key``: a new one is never inserted, a stored one never rewritten.

        Returns whether a stored row remains for the caller to delete (False for a row added
        in this batch, which never reaches the table).
        """
        ...

    def flush(self) -> int:
        """Insert the new rows and rewrite the changed ones; how many that was.

        The cache's last word for the batch, made once: the new rows are written by the time
        the batch commits (as :meth:`ViewWriter.append` writes), so nothing in the batch reads
        the table after it.
        """
        ...


class ViewWriter(Protocol):
    """One transaction's writes to the read tables; the runner commits them with the positions."""

    def rows(self, table: str, key: str) -> RowCache:
        """A cache of ``table``'s rows keyed by its column ``key``, for this batch."""
        ...

    def insert(self, table: str, rows: Sequence[Row]) -> int:
        """Insert ``rows`` (dicts with every column); how many."""
        ...

    def insert_values(self, table: str, columns: Sequence[str], values: list[list[Any]]) -> int:
        """Insert rows given as value lists in the order of ``columns``; how many.

        The lists may be converted in place to the columns' storage format.
        """
        ...

    def append(self, table: str, columns: Sequence[str], values: list[list[Any]]) -> int:
        """Insert rows this batch never reads back, given as value lists in ``columns`` order.

        They are written by the time the batch commits, perhaps after ``process`` returned and
        from another thread, so nothing in the batch may read them (nor change the lists).
        Returns how many.
        """
        ...

    def select(
        self,
        table: str,
        columns: Sequence[str],
        key_columns: Sequence[str],
        keys: Sequence[tuple[Any, ...]],
    ) -> list[tuple[Any, ...]]:
        """The ``columns`` of every row whose ``key_columns`` hold one of ``keys``."""
        ...

    def delete(
        self, table: str, key_columns: Sequence[str], keys: Sequence[tuple[Any, ...]]
    ) -> None:
        """Delete every row whose ``key_columns`` hold one of ``keys``."""
        ...

    def step_through(
        self,
        table: str,
        order: tuple[str, str],
        group_columns: Sequence[str],
        wanted: Sequence[tuple[tuple[Any, ...], tuple[Any, Any] | None, int]],
    ) -> list[tuple[Any, Any] | None]:
        """For each ``(group, start, steps)``: the ``order`` values of a row ``steps`` rows on.

        A group is the rows whose ``group_columns`` hold its values, ordered by the two
        ``order`` columns (a measure, then what tells equal measures apart). With ``start``
        None, the row at 0-based rank ``steps``; else the row ``steps`` rows after the one whose
        ``order`` values are ``start`` (before it when negative; itself at 0). None where the
        group has no such row. Each is a walk of ``steps`` rows along an ordered index.
        """
        ...

    def maxima(
        self, table: str, column: str, group_column: str, groups: Collection[Any]
    ) -> dict[Any, Any]:
        """The greatest ``column`` of each of ``groups`` (by ``group_column``) that has rows."""
        ...


# -- the JSON form of row values --------------------------------------------------------------


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


def encode_json(value: Any) -> str:
    """``value`` as JSON text: enums by value, ids and times as text, value objects as objects.

    orjson writes enums, UUIDs, datetimes (ISO 8601), dataclasses and tuples itself, in one pass;
    keys that are not text and integers beyond 64 bits take :func:`_encode_rarely`.
    """
    try:
        return orjson.dumps(value, default=_json_default).decode()
    except orjson.JSONEncodeError:
        return _encode_rarely(value)


def _encode_rarely(value: Any) -> str:
    """:func:`encode_json` of what orjson refuses by default, with the same conventions.

    Keys that are not text (an enum's value, a number's text) cost orjson's slower option, so
    only the values holding them pay it; the standard encoder takes integers beyond 64 bits.
    """
    try:
        return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        return _slow_encode(value)


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (enums by value, ids and times as text, tuples as lists)."""
    return orjson.loads(encode_json(value))
