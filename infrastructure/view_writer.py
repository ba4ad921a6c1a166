"""The SQL implementation of ``application.view_port``: one transaction's writes to the read tables.

Projections name tables and columns; :class:`SqlViewWriter` finds them in
``infrastructure.read_tables`` and writes in bulk (``infrastructure.bulk_sql``), a few statements
per batch whatever its size. It also moves the tracking rows, in the same transaction, for the
runner (projections never do).
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, func, select

from infrastructure.bulk_sql import (
    convert_values,
    driver_query,
    insert_many,
    insert_values,
    update_many,
    write_values,
)
from infrastructure.read_tables import metadata

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

    from sqlalchemy import Connection, Select, Table

    from application.view_port import Row

IN_CHUNK = 500
"""Keys per ``IN (...)`` list when a batch preloads rows."""
WALKS = 200
"""Walks per statement of :meth:`SqlViewWriter.step_through` (SQLite takes 500 ``UNION`` parts)."""


class SqlRowCache:
    """The rows one batch touches, keyed by their primary key, written back once at the end.

    Rows are read at most once per batch (``preload`` does it in a few queries) and changed as
    plain dicts; ``flush`` appends the new ones (:meth:`SqlViewWriter.append`: inserted by the
    time the batch commits) and updates the changed ones with one ``executemany``, which is what
    makes a batch cheap compared to an event at a time. ``flush`` is the cache's last word for
    its batch: nothing reads the table in the batch after it, and it is called once.
    """

    def __init__(self, writer: SqlViewWriter, table: Table, key: str) -> None:
        """Cache rows of ``table`` keyed by column ``key``, written through ``writer``."""
        self.writer = writer
        self.connection = writer.connection
        self.table = table
        self.key = key
        self.rows: dict[Any, Row | None] = {}
        self.original: dict[Any, Row] = {}
        self.created: set[Any] = set()
        self.flushed = False

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

    def find(self, column: str, value: Any) -> Row | None:
        """A row whose ``column`` holds ``value``: a cached one first, else a stored one."""
        key = next(
            (k for k, row in self.rows.items() if row is not None and row[column] == value), None
        ) or self.connection.scalar(
            select(self.table.c[self.key]).where(self.table.c[column] == value)
        )
        return self.get(key) if key else None

    def drop(self, key: Any) -> bool:
        """Forget the row of ``key``; whether a stored one remains (for the caller to delete).

        It reads as missing for the rest of the batch, as it will once the caller deleted it.
        """
        created = key in self.created
        self.created.discard(key)
        stored = self.rows.get(key) is not None and not created
        self.rows[key] = None
        self.original.pop(key, None)
        return stored

    def flush(self) -> int:
        """Append the new rows and update the changed ones; how many rows that was."""
        if self.flushed:  # its new rows are not in the table yet: a change to one would be lost
            raise RuntimeError(f"the {self.table.name} rows of this batch were already flushed")
        self.flushed = True
        new = [row for key in self.created if (row := self.rows[key]) is not None]
        changed = [
            row
            for key, row in self.rows.items()
            if row is not None and key not in self.created and row != self.original.get(key)
        ]
        if new:
            columns = tuple(c.name for c in self.table.columns)
            pick = operator.itemgetter(*columns)
            self.writer.append(self.table.name, columns, [list(pick(row)) for row in new])
        update_many(self.connection, self.table, self.key, changed)
        return len(new) + len(changed)


@functools.cache
def _select_by_keys(table: Table, key: str) -> Select[Any]:
    """``SELECT * FROM table WHERE key IN (:keys)``, built once (the list is bound at execution)."""
    return select(table).where(table.c[key].in_(bindparam("keys", expanding=True)))


class SqlViewWriter:
    """``application.view_port.ViewWriter`` on one SQLAlchemy connection (its transaction)."""

    def __init__(self, connection: Connection) -> None:
        """Write through ``connection``, inside the transaction it is in."""
        self.connection = connection
        self.appended: list[tuple[Table, Sequence[str], list[list[Any]]]] = []
        """Rows :meth:`append` took, in order, until :meth:`send_appended` writes them."""

    def rows(self, table: str, key: str) -> SqlRowCache:
        """A cache of ``table``'s rows keyed by its column ``key``, for this batch."""
        return SqlRowCache(self, metadata.tables[table], key)

    def insert(self, table: str, rows: Sequence[Row]) -> int:
        """Insert ``rows`` (dicts with every column); how many."""
        insert_many(self.connection, metadata.tables[table], rows)
        return len(rows)

    def insert_values(self, table: str, columns: Sequence[str], values: list[list[Any]]) -> int:
        """Insert rows given as value lists in the order of ``columns`` (converted in place)."""
        insert_values(self.connection, metadata.tables[table], columns, values)
        return len(values)

    def append(self, table: str, columns: Sequence[str], values: list[list[Any]]) -> int:
        """Insert rows the batch never reads back, as late as its commit (converted in place).

        They are converted now, in the batch's thread: :meth:`send_appended` may run in another
        thread, and then only the driver's work is left to it.
        """
        if values:
            written = metadata.tables[table]
            convert_values(self.connection, written, columns, values)
            self.appended.append((written, columns, values))
        return len(values)

    def send_appended(self) -> None:
        """Insert every row :meth:`append` took (the transaction's last writes before COMMIT)."""
        appended, self.appended = self.appended, []
        for table, columns, values in appended:
            write_values(self.connection, table, columns, values, statements="few")

    def select(
        self,
        table: str,
        columns: Sequence[str],
        key_columns: Sequence[str],
        keys: Sequence[tuple[Any, ...]],
    ) -> list[tuple[Any, ...]]:
        """The ``columns`` of every row whose ``key_columns`` hold one of ``keys``."""
        if not keys:
            return []
        statement = f"SELECT {', '.join(columns)} FROM {table}" + _keys_in(key_columns, len(keys))
        return [tuple(row) for row in driver_query(self.connection, statement, _flat(keys))]

    def delete(
        self, table: str, key_columns: Sequence[str], keys: Sequence[tuple[Any, ...]]
    ) -> None:
        """Delete every row whose ``key_columns`` hold one of ``keys``."""
        if keys:
            statement = f"DELETE FROM {table}" + _keys_in(key_columns, len(keys))
            driver_query(self.connection, statement, _flat(keys))

    def step_through(
        self,
        table: str,
        order: tuple[str, str],
        group_columns: Sequence[str],
        wanted: Sequence[tuple[tuple[Any, ...], tuple[Any, Any] | None, int]],
    ) -> list[tuple[Any, Any] | None]:
        """For each ``(group, start, steps)``: the ``order`` values of a row ``steps`` rows on.

        One statement for them all: each part seeks ``start`` in the group's part of the
        ordered index (a row-value comparison) and walks ``steps`` rows from there, so its cost
        is the steps, not the group's size (``OFFSET`` from the group's first row walked half
        a day's rows for a median).
        """
        found = [start if steps == 0 else None for _, start, steps in wanted]  # staying put
        walks = [n for n, (_, start, steps) in enumerate(wanted) if start is None or steps]
        for first in range(0, len(walks), WALKS):
            parts: list[str] = []
            params: list[Any] = []
            for n in walks[first : first + WALKS]:
                group, start, steps = wanted[n]
                walk = _step(table, order, group_columns, start, steps)
                parts.append(f"SELECT {n}, m, i FROM ({walk}) AS s{n}")
                params += [*group, *(start or ()), abs(steps) - (start is not None)]
            answers = driver_query(self.connection, " UNION ALL ".join(parts), params)
            for n, measure, ident in answers:
                found[n] = (measure, ident)
        return found

    def maxima(
        self, table: str, column: str, group_column: str, groups: Collection[Any]
    ) -> dict[Any, Any]:
        """The greatest ``column`` of each of ``groups`` (by ``group_column``) that has rows."""
        columns = metadata.tables[table].c
        wanted = sorted(groups)
        found: dict[Any, Any] = {}
        for start in range(0, len(wanted), IN_CHUNK):
            query = (
                select(columns[group_column], func.max(columns[column]))
                .where(columns[group_column].in_(wanted[start : start + IN_CHUNK]))
                .group_by(columns[group_column])
            )
            found.update(dict(self.connection.execute(query).all()))
        return found

    def advance(self, claims: Mapping[str, int], last: int, notify_channel: str | None) -> bool:
        """Move each named tracking row from its claimed position to ``last``, all or none.

        False when another runner moved one first (the caller rolls back). One statement on the
        driver's connection, in one round trip. On PostgreSQL it also makes the transaction's
        commit asynchronous (``synchronous_commit`` off, for this transaction only): read rows
        are derived from the log, and a commit lost to a server crash loses its tracking move
        with it, so the batch is applied again, to the same rows (as SQLite's
        ``synchronous=NORMAL`` for the read side). With a ``notify_channel`` it also NOTIFYs
        the channel with ``last`` at commit.
        """
        statement = "UPDATE projection_tracking SET position = ?" + _keys_in(
            ("name", "position"), len(claims)
        )
        params: list[Any] = [last, *_flat(claims.items())]
        if self.connection.dialect.name != "postgresql":
            statement += " RETURNING name"
        elif notify_channel:
            # Delivered at commit, with the rows; one per transaction (PostgreSQL folds
            # identical notifications), sent in the claim's own round trip.
            statement += f" RETURNING {ASYNC_COMMIT}, pg_notify(?, ?)"
            params += [notify_channel, str(last)]
        else:
            statement += f" RETURNING {ASYNC_COMMIT}"
        return len(driver_query(self.connection, statement, params)) == len(claims)


ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true)"
"""For the rest of the transaction: its commit does not wait for the WAL to reach the disk."""


def _step(
    table: str, order: tuple[str, str], group_columns: Sequence[str], start: Any, steps: int
) -> str:
    """The row ``steps`` rows on from ``start`` in a group (:meth:`SqlViewWriter.step_through`)."""
    if start is None and steps < 0:
        raise ValueError(f"no row {steps} rows before a group's first")
    measure, ident = order
    where = " AND ".join(f"{name} = ?" for name in group_columns)
    descending = steps < 0
    if start is not None:
        where += f" AND ({measure}, {ident}) {'<' if descending else '>'} (?, ?)"
    way = " DESC" if descending else ""
    return (
        f"SELECT {measure} AS m, {ident} AS i FROM {table} WHERE {where}"
        f" ORDER BY {measure}{way}, {ident}{way} LIMIT 1 OFFSET ?"
    )


def _keys_in(key_columns: Sequence[str], count: int) -> str:
    """``WHERE (key columns) IN (VALUES …)`` for ``count`` keys."""
    row = "(" + ", ".join("?" * len(key_columns)) + ")"
    return f" WHERE ({', '.join(key_columns)}) IN (VALUES {', '.join([row] * count)})"


def _flat(keys: Iterable[tuple[Any, ...]]) -> list[Any]:
    return [value for key in keys for value in key]
