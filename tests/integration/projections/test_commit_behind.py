"""A full batch commits behind the next read (projections/commit_behind.py), exactly-once still.

The end of a batch (its appended rows, then COMMIT) runs in a thread while the runner reads the
next batch. Whatever happens there: a batch is heard of only once it committed, in log order;
a batch whose end fails moves no position and leaves no row, the runner raises its error, and a
runner started afterwards applies it as if nothing had happened.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from sqlalchemy import select

from domain.run import Run
from infrastructure.read_tables import projection_tracking
from projections.base import Committed, Written
from projections.runner import Projector
from tests.integration._projection_helpers import dump, notifications, run_scenario

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from application.view_port import ViewWriter
    from bootstrap.composition import Services
    from projections.base import Positioned

BATCH = 7


class Streams:
    """Appends one ``trace_stream`` row per Run event; a poisoned position repeats a key."""

    name = "test_streams"
    tables = ("trace_stream",)
    interests = (Run.Event,)

    def __init__(self, poisoned: int | None = None) -> None:
        self.poisoned = poisoned

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        rows = [[f"at-{position}", stream] for position, _, stream in events]
        if any(position == self.poisoned for position, _, _ in events):
            rows.append(rows[0])  # the same key twice: the batch's end fails at the database
        return Written(view.append("trace_stream", ("stream_id", "run_id"), rows))


def _position(engine: Engine, name: str) -> int:
    with engine.connect() as connection:
        found = connection.scalar(
            select(projection_tracking.c.position).where(projection_tracking.c.name == name)
        )
    return int(found or 0)


def _poison(store: HarnessStore) -> tuple[int, int]:
    """A position in the third full batch, and the last position of the second."""
    log = notifications(store)
    assert len(log) > 4 * BATCH
    runs = [
        position
        for position, event, _ in log[2 * BATCH : 3 * BATCH]
        if isinstance(event, Run.Event)
    ]
    return runs[0], log[2 * BATCH - 1][0]


def test_listeners_hear_of_each_batch_in_order_once_it_committed(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_scenario(services, "conclusion_supported")
    projector = Projector(store, engine, [Streams()], batch_size=BATCH)
    heard: list[tuple[int, int, int]] = []

    def listener(committed: Committed) -> None:
        heard.append((committed.after, committed.last, _position(engine, Streams.name)))

    projector.listeners.append(listener)
    assert projector.catch_up() == len(notifications(store))
    assert len(heard) > 3
    assert [after for after, _, _ in heard[1:]] == [last for _, last, _ in heard[:-1]]
    assert all(stored >= last for _, last, stored in heard), "heard of before it committed"


def test_a_batch_whose_end_fails_moves_nothing_and_is_applied_later(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_scenario(services, "conclusion_supported")
    poisoned, before = _poison(store)
    projector = Projector(store, engine, [Streams(poisoned)], batch_size=BATCH)
    heard: list[int] = []
    projector.listeners.append(lambda committed: heard.append(committed.last))
    errors: Any = (sqlite3.IntegrityError, psycopg.errors.IntegrityError)

    with pytest.raises(errors):
        projector.catch_up()
    assert _position(engine, Streams.name) == before  # the batch before it committed, not it
    assert heard[-1] == before
    stored = {row["stream_id"] for row in dump(engine)["trace_stream"]}
    assert f"at-{poisoned}" not in stored
    assert all(int(key.removeprefix("at-")) <= before for key in stored)

    Projector(store, engine, [Streams()], batch_size=BATCH).catch_up()
    caught_up = dump(engine)
    Projector(store, engine, [Streams()], batch_size=BATCH).rebuild()
    assert dump(engine) == caught_up
