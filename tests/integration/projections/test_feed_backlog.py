"""A stream's backlog and whether its feed has ended, read in one statement (both databases)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.queries import feed_after, feed_backlog
from projections.runner import Projector
from projections.sse_feed import SseFeed
from tests.integration._projection_helpers import run_scenario

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from application.store import HarnessStore
    from bootstrap.composition import Services


def test_the_backlog_comes_with_whether_the_feed_has_its_last_entry(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_id = str(run_scenario(services, "conclusion_supported").run_id)
    stepping = Projector(store, engine, [SseFeed()], batch_size=1)
    with engine.connect() as connection:
        assert feed_backlog(connection, run_id, 0) == ([], False)  # not in the feed yet
    while True:  # one log entry at a time, up to the run's first feed entry
        stepping.step()
        with engine.connect() as connection:
            if feed_after(connection, run_id, 0):
                break
    with engine.connect() as connection:
        begun = feed_after(connection, run_id, 0)
        assert feed_backlog(connection, run_id, 0) == (begun, False)
        assert feed_backlog(connection, run_id, begun[-1]["seq"]) == ([], False)

    stepping.catch_up()
    with engine.connect() as connection:
        entries = feed_after(connection, run_id, 0)
        last = entries[-1]["seq"]
        assert entries[-1]["event"] == "done"
        assert feed_backlog(connection, run_id, 0) == (entries, True)
        assert feed_backlog(connection, run_id, last - 1) == ([entries[-1]], True)
        assert feed_backlog(connection, run_id, last) == ([], True)
        assert feed_backlog(connection, "not-a-run", 0) == ([], False)
