"""A runner deserialises only the log entries its projections read (``projections.base.Readers``).

Real runs on both stores; an entry is overwritten with bytes that are no event, as an operator
with SQL access could, to show which runner reads it: the feed's follower (five Run event
classes) goes past an invocation's entry it never reads and still moves to the head, while
every runner that reads the entry stops before it and names it; an entry the feed reads stops
the feed too. Nothing is applied twice or skipped: the feed's rows equal those of a runner of
every projection over the intact log.
"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from application.store import HarnessStore
from bootstrap.composition import Services
from domain.run import Run
from domain.tool_invocation import ToolInvocation
from infrastructure.read_tables import sse_event, sse_run
from projections.base import UnreadableLogEntry
from projections.runner import Projector
from projections.sse_feed import SseFeed
from tests.integration._projection_helpers import dump, notifications, run_scenario

GARBAGE = b"\xff not an event"


def _overwrite(services: Services, kind: type) -> int:
    """Overwrite the state of the log's first ``kind`` entry; its position."""
    at = next(p for p, event, _ in notifications(services.store) if isinstance(event, kind))
    sqlite = services.settings.database.kind == "sqlite"
    table, column = ("stored_events", "rowid") if sqlite else ("harness_events", "notification_id")
    with services.engine.begin() as connection:
        connection.execute(
            text(f"UPDATE {table} SET state = :state WHERE {column} = :at"),
            {"state": GARBAGE, "at": at},
        )
    return at


def _feed_rows(engine: Engine) -> dict[str, object]:
    tables = dump(engine)
    return {name: tables[name] for name in (sse_event.name, sse_run.name)}


def test_the_feed_goes_past_an_entry_it_does_not_read_and_the_others_stop_before_it(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_scenario(services, "conclusion_supported")
    Projector(store, engine).catch_up()
    expected = _feed_rows(engine)
    at = _overwrite(services, ToolInvocation.ToolInvocationStarted)

    with pytest.raises(UnreadableLogEntry, match=f"log entry {at} "):
        Projector(store, engine).rebuild()
    assert Projector(store, engine).positions()["trace_event"] < at  # it reads invocations

    feed = Projector(store, engine, [SseFeed()])  # as the service follows it: on its own
    feed.rebuild()
    assert feed.positions() == {SseFeed.name: store.head()}
    assert _feed_rows(engine) == expected  # every entry it reads, once


def test_an_entry_the_feed_reads_stops_the_feed_before_it(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_scenario(services, "conclusion_supported")
    at = _overwrite(services, Run.ReleaseDecision)

    feed = Projector(store, engine, [SseFeed()])
    with pytest.raises(UnreadableLogEntry, match=f"log entry {at} "):
        feed.rebuild()
    assert feed.positions()[SseFeed.name] < at
