"""Feed entries made ahead of the table, from this process's appends, on both databases.

What a worker hands its streams at once is what the feed follower then commits, with the same
numbers; a stream resumed after an entry made ahead ends when the committed entry comes by.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from sqlalchemy import Engine

from api.feed import follow
from api.feed_hub import FeedHub, Subscription
from application.store import HarnessStore
from bootstrap.composition import Services
from projections.feed_ahead import FeedAhead
from projections.queries import feed_after
from tests.integration._projection_helpers import run_scenario
from tests.integration.projections.test_feed_hub import WAIT, Feed


def committed(engine: Engine, run_id: str) -> list[tuple[int, str, Any]]:
    with engine.connect() as connection:
        return [(r["seq"], r["event"], r["data"]) for r in feed_after(connection, run_id, 0)]


@pytest.mark.parametrize("scenario", ["conclusion_supported", "paths/cancel_during_tool"])
def test_entries_made_ahead_are_the_rows_the_follower_commits(
    services: Services, store: HarnessStore, engine: Engine, scenario: str
) -> None:
    made: list[dict[str, Any]] = []
    ahead = FeedAhead(lambda rows, _then: made.extend(rows))
    store.listeners.append(ahead.appended)
    try:
        result = run_scenario(services, scenario)
    finally:
        store.listeners.remove(ahead.appended)
    Feed(store, engine, None).catch_up()

    run_id = str(result.run_id)
    assert [(r["seq"], r["event"], r["data"]) for r in made] == committed(engine, run_id)
    assert made and made[-1]["event"] in {"done", "failure"}


def test_a_stream_resumed_after_an_entry_made_ahead_ends_when_it_is_committed(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    """Last-Event-ID names the ``done`` made ahead; the table does not hold it yet."""
    made: list[dict[str, Any]] = []
    ahead = FeedAhead(lambda rows, _then: made.extend(rows))
    store.listeners.append(ahead.appended)
    try:
        result = run_scenario(services, "conclusion_supported")
    finally:
        store.listeners.remove(ahead.appended)
    run_id = str(result.run_id)
    hub = Subscribed(engine, threading.Event(), poll_interval=3600)  # not started: no queries
    feed = Feed(store, engine, hub)

    async def resumed() -> list[str]:
        chunks: list[str] = []
        stream = follow(hub, run_id, made[-1]["seq"], keepalive=3600)
        reading = asyncio.ensure_future(_collect(stream, chunks))
        assert await asyncio.to_thread(hub.subscribed.wait, WAIT)
        # Committed now, the follower hands `done` over (or, should the stream read its backlog
        # after the commit, it finds the feed closed): either way the stream ends, unsent.
        await asyncio.to_thread(feed.catch_up)
        async with asyncio.timeout(WAIT):
            await reading
        return chunks

    assert asyncio.run(resumed()) == []
    assert committed(engine, run_id)[-1][0] == made[-1]["seq"]


def test_the_wake_given_with_entries_made_ahead_runs_after_the_streams_took_them(
    engine: Engine,
) -> None:
    """The feed follower's wake-up waits for the streams' turn, or runs at once if none watch."""
    hub = FeedHub(engine, threading.Event(), poll_interval=3600)
    row = {"run_id": "run-1", "seq": 1, "event": "metadata", "data": {"query": "q"}}
    woken: list[str] = []
    hub.ahead([dict(row)], lambda: woken.append("nobody watching"))
    assert woken == ["nobody watching"]

    async def watched() -> list[int]:
        subscription = hub.subscribe("run-1", asyncio.get_running_loop())
        queued: list[int] = []
        taken = asyncio.Event()

        def wake() -> None:
            queued.append(subscription.queue.qsize())
            taken.set()

        await asyncio.to_thread(hub.ahead, [dict(row)], wake)
        async with asyncio.timeout(WAIT):
            await taken.wait()
        return queued

    assert asyncio.run(watched()) == [1]


class Subscribed(FeedHub):
    """A hub that says when a stream subscribed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subscribed = threading.Event()

    def subscribe(self, run_id: str, loop: asyncio.AbstractEventLoop) -> Subscription:
        found = super().subscribe(run_id, loop)
        self.subscribed.set()
        return found


async def _collect(stream: Any, chunks: list[str]) -> None:
    async for chunk in stream:
        chunks.append(chunk)
