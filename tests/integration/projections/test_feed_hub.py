"""The feed hub: what reaches the streams of a worker, handed over in process or read on wake-up.

Real read tables on both databases; the streams are asyncio queues on a real event loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from sqlalchemy import Engine

from api.feed_hub import FeedHub, Subscription
from api.sse_wire import frame
from application.store import HarnessStore
from bootstrap.composition import Services
from projections.runner import Projector
from projections.sse_feed import SseFeed
from tests.integration._projection_helpers import run_scenario

WAIT = 30.0
"""Seconds a test waits for the hub's thread before it fails (a bound, not a timing)."""


class Feed:
    """A feed follower that hands its committed batches to a hub, as a worker's does."""

    def __init__(self, store: HarnessStore, engine: Engine, hub: FeedHub | None) -> None:
        self.projector = Projector(store, engine, [SseFeed()], batch_size=3)
        self.projector.ensure_tracking()
        if hub is not None:
            self.projector.listeners.append(
                lambda batch: hub.publish(batch.after, batch.last, batch.entries(SseFeed.name))
            )

    def catch_up(self) -> int:
        return self.projector.catch_up()


def received(subscription: Subscription) -> list[tuple[int, str]]:
    """What the hub queued for a stream so far: (seq, event) in order."""
    found = []
    while not subscription.queue.empty():
        row = subscription.queue.get_nowait()
        found.append((row["seq"], row["event"]))
    return found


async def settle(loop: asyncio.AbstractEventLoop) -> None:
    """Let the hub's calls into this loop run (they were scheduled before this one)."""
    done = asyncio.Event()
    loop.call_soon_threadsafe(done.set)
    await done.wait()


def test_handed_over_batches_reach_the_watching_streams_without_a_query(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    """In process: each committed batch reaches the streams of its runs, once, in order."""
    first = run_scenario(services, "conclusion_supported", "s1")
    second = run_scenario(services, "conclusion_supported", "s2")
    hub = FeedHub(engine, threading.Event(), poll_interval=3600)  # not started: no queries
    feed = Feed(store, engine, hub)

    async def scenario() -> tuple[list[Any], list[Any], list[Any]]:
        loop = asyncio.get_running_loop()
        watching = hub.subscribe(str(first.run_id), loop)
        twice = hub.subscribe(str(first.run_id), loop)
        other = hub.subscribe(str(second.run_id), loop)
        feed.catch_up()
        await settle(loop)
        return received(watching), received(twice), received(other)

    watching, twice, other = asyncio.run(scenario())
    assert [event for _, event in watching] == [
        "metadata",
        "status",
        "status",
        "status",
        "content",
        "done",
    ]
    assert [seq for seq, _ in watching] == list(range(1, len(watching) + 1))
    assert twice == watching
    assert [event for _, event in other][-2:] == ["content", "done"]
    assert not hub.wake.is_set()  # nothing was left for the query path


def test_a_hand_over_after_a_gap_is_left_to_the_query_which_delivers_the_rest(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    """Entries committed without a hand-over (another process) come from the query, none twice."""
    result = run_scenario(services, "conclusion_supported")
    hub = FeedHub(engine, threading.Event(), poll_interval=3600)
    elsewhere = Feed(store, engine, None)  # a projection process: it hands nothing over
    here = Feed(store, engine, hub)

    async def scenario() -> list[tuple[int, str]]:
        loop = asyncio.get_running_loop()
        subscription = hub.subscribe(str(result.run_id), loop)
        elsewhere.projector.step()  # the first batch, unseen by the hub
        hub.start()
        try:
            here.catch_up()  # starts after the hub's mark: handed to the query instead
            seen: list[tuple[int, str]] = []
            async with asyncio.timeout(WAIT):
                while not seen or seen[-1][1] != "done":
                    row = await subscription.queue.get()
                    seen.append((row["seq"], row["event"]))
            await settle(loop)
            seen += received(subscription)
            return seen
        finally:
            hub.close()

    seen = asyncio.run(scenario())
    assert [seq for seq, _ in seen] == list(range(1, len(seen) + 1))
    assert seen[0][1] == "metadata" and seen[-1][1] == "done"


def test_nothing_is_handed_over_when_no_stream_watches(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_scenario(services, "conclusion_supported")
    hub = FeedHub(engine, threading.Event(), poll_interval=3600)
    assert Feed(store, engine, hub).catch_up() > 0
    assert hub.watched == 0 and not hub.wake.is_set()


def test_a_frame_escapes_the_line_breaks_line_based_clients_split_at() -> None:
    query = "one\u2028two\u2029three\x85four"
    row = {"seq": 3, "event": "metadata", "data": {"query": query}}
    rendered = frame(row)
    assert not {"\u2028", "\u2029", "\x85"} & set(rendered)
    lines = rendered.splitlines()  # splits at those too: the frame must survive it
    assert lines[:3] == ["id: 3", "event: metadata", lines[2]]
    assert json.loads(lines[2].removeprefix("data: ")) == {"query": query}
