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

from sqlalchemy import Connection, Engine, event

from api.feed import follow
from api.feed_hub import FeedHub, Subscription
from application.store import HarnessStore
from bootstrap.composition import Services
from projections.feed_ahead import FeedAhead
from projections.queries import feed_after
from tests.integration._projection_helpers import run_scenario
from tests.integration.projections.test_feed_ahead import Subscribed
from tests.integration.projections.test_feed_hub import WAIT, Feed


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


def test_a_stream_that_subscribes_while_the_hub_reads_gets_what_was_committed_after_its_read(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    """Projections in another process: the hub reads new entries for the runs watched when it
    began; a stream of another run subscribes and reads its backlog meanwhile, and the entries
    committed right after that read must still reach it."""
    watched_run = str(run_scenario(services, "conclusion_supported", "s1").run_id)
    late_run = str(run_scenario(services, "conclusion_supported", "s2").run_id)
    elsewhere = Feed(store, engine, None)  # a projection process: it hands nothing over
    hub = FeedHub(engine, threading.Event(), poll_interval=3600)
    race = _Meanwhile(hub, late_run, elsewhere)

    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()
        hub.subscribe(watched_run, loop)  # an earlier stream: the hub reads for its run
        race.loop = loop
        event.listen(engine, "engine_connect", race.on_connect)
        hub.start()
        try:
            hub.wake.set()
            assert await asyncio.to_thread(race.done.wait, WAIT)
            assert race.backlog == []  # the late stream's backlog read found nothing yet
            seen: list[int] = []
            async with asyncio.timeout(WAIT):
                while not seen or seen[-1] < len(race.committed):
                    hub.wake.set()  # the hub reads again and again: nothing is left behind
                    seen.append((await race.subscription.queue.get())["seq"])
            return seen
        finally:
            event.remove(engine, "engine_connect", race.on_connect)
            hub.close()

    assert asyncio.run(scenario()) == list(range(1, len(race.committed) + 1))


def test_an_append_is_not_held_up_by_a_stream_whose_subscribe_waits_for_the_database(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    """The first stream's subscribe reads the feed's position; the read side is slow (a rebuild
    holds its lock, the pool is exhausted). The worker's appends hand their entries to the hub
    in the appending thread: they must not wait for that read."""
    hub = FeedHub(engine, threading.Event(), poll_interval=3600)  # not started: no queries
    ahead = FeedAhead(hub.ahead)
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    def slow_read(_connection: Connection) -> None:
        if threading.current_thread().name == "subscriber" and not entered.is_set():
            entered.set()
            assert release.wait(2 * WAIT)  # the test releases it, failing or not

    def run_to_its_end() -> None:
        run_scenario(services, "conclusion_supported")
        finished.set()

    async def scenario() -> bool:
        loop = asyncio.get_running_loop()
        subscriber = threading.Thread(
            target=hub.subscribe, args=("run-1", loop), name="subscriber", daemon=True
        )
        subscriber.start()
        assert await asyncio.to_thread(entered.wait, WAIT)
        running = threading.Thread(target=run_to_its_end, daemon=True)
        running.start()
        try:
            return await asyncio.to_thread(finished.wait, WAIT)
        finally:
            release.set()
            await asyncio.to_thread(running.join, WAIT)
            await asyncio.to_thread(subscriber.join, WAIT)

    event.listen(engine, "engine_connect", slow_read)
    store.listeners.append(ahead.appended)
    try:
        assert asyncio.run(scenario()), "the run's appends waited for a stream's subscribe"
    finally:
        store.listeners.remove(ahead.appended)
        event.remove(engine, "engine_connect", slow_read)


class _Meanwhile:
    """At the hub's first read: a stream of ``run_id`` subscribes and reads its backlog, then
    the projection process commits the feed."""

    def __init__(self, hub: FeedHub, run_id: str, elsewhere: Feed) -> None:
        self.hub, self.run_id, self.elsewhere = hub, run_id, elsewhere
        self.loop: asyncio.AbstractEventLoop | None = None
        self.done = threading.Event()
        self.backlog: list[dict[str, Any]] | None = None
        self.committed: list[dict[str, Any]] = []
        self.subscription: Subscription

    def on_connect(self, _connection: Connection) -> None:
        if threading.current_thread().name != "harness-feed" or self.backlog is not None:
            return
        assert self.loop is not None
        self.backlog = []
        self.subscription = self.hub.subscribe(self.run_id, self.loop)
        with self.hub.engine.connect() as connection:
            self.backlog = feed_after(connection, self.run_id, 0)
        self.elsewhere.catch_up()
        with self.hub.engine.connect() as connection:
            self.committed = feed_after(connection, self.run_id, 0)
        self.done.set()


async def _collect(stream: Any, chunks: list[str]) -> None:
    async for chunk in stream:
        chunks.append(chunk)
