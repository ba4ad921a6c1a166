"""The read side's driver-level writes and reads, on both databases, around their size limits.

On PostgreSQL a few rows go as one ``INSERT`` and more as ``COPY``, and both they and the keyed
reads pass their placeholders as ``$n`` through psycopg's raw cursor (past 50 parameters its
default cursor parses the text again on every call): values that look like placeholders must
arrive as they were sent, at every size.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from infrastructure.bulk_sql import FEW_ROWS
from infrastructure.read_store import SqlReadStore
from infrastructure.read_tables import create_read_tables, trace_event

if TYPE_CHECKING:
    from sqlalchemy import Engine

COLUMNS = tuple(c.name for c in trace_event.columns)
BEGAN = datetime(2026, 12, 6, 14, 0, tzinfo=UTC)


def _rows(count: int, first: int) -> list[list[Any]]:
    """``count`` trace rows whose texts hold placeholder look-alikes of both styles."""
    return [
        [
            first + n,
            f"run-? ${n} %s {n}",
            f"stream-$1-{n}",
            n,
            "EVENT?",
            "agent",
            "ok",
            BEGAN + timedelta(microseconds=n),
            {"text": f"why? ${n + 1} %(x)s", "n": n},
        ]
        for n in range(count)
    ]


def _stored(engine: Engine) -> list[list[Any]]:
    with engine.connect() as connection:
        found = connection.execute(select(trace_event).order_by(trace_event.c.position))
        return [[*row[:7], row[7].replace(tzinfo=UTC), row[8]] for row in found]


@pytest.mark.parametrize("count", [1, 5, FEW_ROWS - 1, FEW_ROWS, FEW_ROWS + 1, 300])
def test_rows_arrive_as_sent_at_every_size(engine: Engine, count: int) -> None:
    create_read_tables(engine)
    sent = _rows(count, first=1)
    with SqlReadStore(engine).transaction() as writer:
        writer.insert_values("trace_event", COLUMNS, [list(row) for row in sent])
    assert _stored(engine) == sent


def test_keyed_reads_and_deletes_past_fifty_parameters(engine: Engine) -> None:
    create_read_tables(engine)
    sent = _rows(120, first=1)
    with SqlReadStore(engine).transaction() as writer:
        writer.insert_values("trace_event", COLUMNS, [list(row) for row in sent])
    wanted = [(row[0], row[1]) for row in sent[::2]]  # 60 keys of two columns: 120 parameters
    with SqlReadStore(engine).transaction() as writer:
        found = writer.select("trace_event", ("position", "run_id"), ("position", "run_id"), wanted)
        assert sorted(found) == sorted(wanted)
        assert writer.select("trace_event", ("position",), ("run_id",), [("run-? $1 %s 2",)]) == []
        writer.delete("trace_event", ("position", "run_id"), wanted)
    assert _stored(engine) == sent[1::2]
