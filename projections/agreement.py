"""Do the read tables agree with the log? Rebuild them from the log elsewhere and compare.

Every projection is rebuilt from position 0 into a fresh SQLite file, by the same code that
keeps the live tables, and every live table is compared with its rebuild row by row, column by
column. A difference names the table, the row's key and the column. A projection whose
tracking position is not the log head is "behind" (it has not applied the newest events) or
"ahead" (its tables hold events the log does not: the log was cut or restored from an older
backup). Behind only counts when an event it reads is among those it has not applied: the events
no projection reads (``harness audit checkpoint``'s, written with no service running to move the
positions past them) leave every table as the log says. Compare a quiet database: rows of runs in
flight change while they are compared.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, inspect, select

from infrastructure.read_tables import (
    metadata,
    projection_tracking,
    read_schema,
    schema_fingerprint,
)
from projections.base import positioned
from projections.runner import Projector

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Engine, Table

    from application.store import HarnessStore
    from projections.base import Projection

SHOWN_PER_TABLE = 20
"""Differences named per table; the rest are counted."""
LOOK_AHEAD = 1000
"""Log entries read at a time past a projection's position, looking for an event it reads."""

COMPARED = [t for t in metadata.sorted_tables if t not in (projection_tracking, read_schema)]
"""Every read table whose rows are compared (tracking positions are compared to the head)."""


@dataclass(frozen=True)
class Difference:
    """One place where a live read table and the log disagree."""

    table: str
    key: str
    """The row's primary key, e.g. ``run_id=…`` ('' when the whole table is concerned)."""
    message: str

    def describe(self) -> str:
        """``table [key]: message``."""
        return (
            f"{self.table} [{self.key}]: {self.message}"
            if self.key
            else f"{self.table}: {self.message}"
        )


@dataclass(frozen=True)
class Agreement:
    """The outcome of a comparison: the log head, the rows compared and every difference."""

    head: int
    positions: dict[str, int]
    rows: int
    differences: list[Difference]


def check_agreement(store: HarnessStore, live: Engine) -> Agreement:
    """Rebuild every projection from ``store``'s log and compare it with the tables on ``live``."""
    missing = _missing_tables(live)
    if missing:
        return Agreement(store.head(), {}, 0, missing)
    with tempfile.TemporaryDirectory(prefix="harness-audit-") as directory:
        rebuilt = create_engine(f"sqlite+pysqlite:///{Path(directory) / 'rebuilt.db'}")
        try:
            projector = Projector(store, rebuilt)
            projector.catch_up()
            head = max(projector.positions().values(), default=0)
            positions = _positions(live)
            rows, differences = 0, []
            for table in COMPARED:
                count, found = compare_table(table, live, rebuilt)
                rows += count
                differences += found
        finally:
            rebuilt.dispose()
    unapplied = _unapplied(store, projector.projections, positions, head)
    tracking = _tracking(positions, projector.names, unapplied, head, store.head())
    return Agreement(head, positions, rows, tracking + differences)


def _missing_tables(live: Engine) -> list[Difference]:
    with live.connect() as connection:
        present = set(inspect(connection).get_table_names())
        stored = (
            connection.scalar(select(read_schema.c.fingerprint))
            if read_schema.name in present
            else None
        )
    missing = [t.name for t in metadata.sorted_tables if t.name not in present]
    if missing:
        why = "missing from the live database: run `harness db init` (or start the service) first"
        return [Difference(name, "", why) for name in missing]
    if stored != schema_fingerprint():
        why = "the live tables were made by another version of the code: rebuild them"
        return [Difference(read_schema.name, "", why)]
    return []


def _positions(live: Engine) -> dict[str, int]:
    with live.connect() as connection:
        return {
            row.name: int(row.position) for row in connection.execute(select(projection_tracking))
        }


def _unapplied(
    store: HarnessStore, projections: Sequence[Projection], positions: dict[str, int], head: int
) -> set[str]:
    """The projections behind ``head`` with an event they read among those not yet applied.

    Reads the log from the earliest position behind, a batch at a time, and stops as soon as
    every projection behind has one.
    """
    behind = {p.name: p for p in projections if positions.get(p.name, head) < head}
    found: set[str] = set()
    read = min((positions[name] for name in behind), default=head)
    while read < head and behind.keys() - found:
        events = positioned(store.mapper, store.notifications(read, LOOK_AHEAD, stop=head))
        if not events:
            break
        for name, projection in behind.items():
            after = positions[name]
            if any(at > after and isinstance(e, projection.interests) for at, e, _ in events):
                found.add(name)
        read = events[-1][0]
    return found


def _tracking(
    positions: dict[str, int],
    names: tuple[str, ...],
    unapplied: set[str],
    head: int,
    latest: int,
) -> list[Difference]:
    """Each projection's position against the head rebuilt (``latest``: the head after).

    A projection behind is named only when it is in ``unapplied`` (an event it reads is past it).
    """
    found: list[Difference] = []
    for name in names:
        position = positions.get(name)
        if position is None:
            found.append(Difference(projection_tracking.name, f"name={name}", "no tracking row"))
        elif position < head and name in unapplied:
            why = f"position {position} is behind the log head {head} by {head - position}"
            found.append(Difference(projection_tracking.name, f"name={name}", why))
        elif position > latest:
            why = f"position {position} is ahead of the log head {head}: events the log lacks"
            found.append(Difference(projection_tracking.name, f"name={name}", why))
    return found


def compare_table(table: Table, live: Engine, rebuilt: Engine) -> tuple[int, list[Difference]]:
    """Rows compared and every difference between a live table and its rebuild."""
    theirs, ours = _rows(table, live), _rows(table, rebuilt)
    found: list[Difference] = []
    for key in sorted(theirs.keys() | ours.keys()):
        label = _label(table, key)
        if key not in ours:
            found.append(Difference(table.name, label, "the live row is not in the log's rebuild"))
        elif key not in theirs:
            found.append(
                Difference(table.name, label, "the log's row is missing from the live table")
            )
        else:
            found += [
                Difference(
                    table.name,
                    label,
                    f"column {name}: live {live_value!r:.80}, log {log_value!r:.80}",
                )
                for name, log_value in ours[key].items()
                if (live_value := theirs[key].get(name)) != log_value
            ]
    if len(found) > SHOWN_PER_TABLE:
        more = len(found) - SHOWN_PER_TABLE
        found = [
            *found[:SHOWN_PER_TABLE],
            Difference(table.name, "", f"… and {more} more differences"),
        ]
    return max(len(theirs), len(ours)), found


def _rows(table: Table, engine: Engine) -> dict[tuple[str, ...], dict[str, Any]]:
    keys = [column.name for column in table.primary_key.columns]
    with engine.connect() as connection:
        found = connection.execute(select(table)).mappings()
        rows = [{name: _plain(value) for name, value in row.items()} for row in found]
    return {tuple(str(row[k]) for k in keys): row for row in rows}


def _plain(value: Any) -> Any:
    """A value as both databases give it back: times in UTC (SQLite drops the zone)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    return value


def _label(table: Table, key: tuple[str, ...]) -> str:
    names = [column.name for column in table.primary_key.columns]
    return ", ".join(f"{name}={value}" for name, value in zip(names, key, strict=True))
