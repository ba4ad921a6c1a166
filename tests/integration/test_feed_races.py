"""The live feed under an unlucky schedule: hand-overs that pass each other, a stream that
leaves while it subscribes, a stream that subscribes while the hub reads.

Real read tables on both databases, real streams (:func:`api.feed.follow`) on a real event loop;
the schedule is forced with events, never with sleeps.
"""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

from sqlalchemy import Engine

from api.feed import follow
from api.feed_hub import FeedHub, Subscription
from application.store import HarnessStore
from infrastructure.composition import Services
from projections.feed_ahead import FeedAhead
from tests.integration._projection_helpers import run_scenario
from tests.integration.test_feed_ahead import Subscribed
from tests.integration.test_feed_hub import WAIT, Feed


def ids(chunks: list[str]) -> list[int]:
    """The ``id:`` of every frame sent, in order."""
    return [int(found) for found in re.findall(r"^id: (\d+)$", "".join(chunks), re.MULTILINE)]


def test_hand_overs_of_two_appends_that_pass_each_other_leave_no_gap(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    """Two threads append to one run in turn (the executor, then a cancel on the same worker).

    ``FeedAhead`` numbers their entries under its lock but hands them on after releasing it, so
    the second append's entries may reach a stream first. A stream that then finds its next
    entry followed by a later one must not send the later one over the gap.
    """
    made: list[dict[str, Any]] = []
    ahead = FeedAhead(lambda rows, _then: made.extend(rows))
    store.listeners.append(ahead.appended)
    try:
        run_id = str(run_scenario(services, "conclusion_supported").run_id)
    finally:
        store.listeners.remove(ahead.appended)
    hub = Subscribed(engine, threading.Event(), poll_interval=3600)  # not started: no queries
    feed = Feed(store, engine, hub)
    first, second, third = made[0], made[1], made[2]

    async def watched() -> list[str]:
        chunks: list[str] = []
        reading = asyncio.ensure_future(_collect(follow(hub, run_id, 0, keepalive=3600), chunks))
        assert await asyncio.to_thread(hub.subscribed.wait, WAIT)
        hub.ahead([dict(first)])
        hub.ahead([dict(third)])  # the later append's hand-over came first
        hub.ahead([dict(second)])
        await asyncio.to_thread(feed.catch_up)  # the follower commits and hands on the rest
        async with asyncio.timeout(WAIT):
            await reading
        return chunks

    assert ids(asyncio.run(watched())) == [row["seq"] for row in made]


class SlowToSubscribe(FeedHub):
    """A hub whose :meth:`subscribe` waits for the test's word (a busy thread pool, say)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entered = threading.Event()
        self.release = threading.Event()
        self.unsubscribed = threading.Event()

    def subscribe(self, run_id: str, loop: asyncio.AbstractEventLoop) -> Subscription:
        self.entered.set()
        assert self.release.wait(WAIT)
        return super().subscribe(run_id, loop)

    def unsubscribe(self, subscription: Subscription) -> None:
        super().unsubscribe(subscription)
        self.unsubscribed.set()


def test_a_stream_that_leaves_while_it_subscribes_leaves_no_subscription(engine: Engine) -> None:
    """The client disconnects while the stream's subscription is being made in a thread."""
    hub = SlowToSubscribe(engine, threading.Event(), poll_interval=3600)

    async def leaving() -> bool:
        stream = follow(hub, "run-1", 0, keepalive=3600)
        reading = asyncio.ensure_future(anext(stream))
        assert await asyncio.to_thread(hub.entered.wait, WAIT)
        reading.cancel()  # what EventStream does when the client leaves
        await asyncio.gather(reading, return_exceptions=True)
        hub.release.set()  # the subscription is made after all
        return await asyncio.to_thread(hub.unsubscribed.wait, WAIT)

    assert asyncio.run(leaving()), "the subscription made for a stream gone was never removed"
    assert hub.watched == 0


async def _collect(stream: Any, chunks: list[str]) -> None:
    async for chunk in stream:
        chunks.append(chunk)
