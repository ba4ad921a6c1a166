"""PostgreSQL restarted under a load of concurrent chats, through a real uvicorn service.

The service runs against a private cluster (never the machine's shared server). Clients start
runs over ``POST /v1/chat`` (streamed) and ``POST /v1/runs`` all the while. The cluster stops
mid-load, as a crash stops it, with a streamed run's write in flight: requests fail with 503
and Retry-After, not 500 and not a hang, and streams that are open stay open. It starts again:
new chats succeed in the same service process, every run whose start a client was told of is in
the log, terminal, with a feed that agrees with what its client saw, and every projection stands
exactly at the head of the log, with the rows a rebuild from the log gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import anyio
import httpx
import psycopg
import pytest
from eventsourcing.utils import get_topic
from psycopg import sql
from sqlalchemy import Engine, Table, select

from api.feed import follow
from api.feed_hub import FeedHub
from api.sse_wire import frame
from application.store import HarnessStore
from bootstrap.composition import bootstrap
from domain.run import Run
from infrastructure.read_tables import metadata, projection_tracking
from infrastructure.settings import Settings
from tests.api._serve import Event, events, read_all, serving
from tests.api.test_streams import HANGS, QUESTION, check_feed
from tests.integration._private_pg import PrivatePostgres, private_postgres

CLIENTS = 6
"""Client threads: half stream chats, half start detached runs."""
DEADLINE_S = 60.0
"""A bound on every wait for an observable condition (never reached when things work)."""
POLL_S = 0.05
PACE_S = 0.1
"""A client's pause after a refusal, so a refused client does not spin."""
HTTP_TIMEOUT = httpx.Timeout(30.0)
"""A request that takes longer than this counts as a hang."""
READ_TABLES: tuple[Table, ...] = tuple(
    t for t in metadata.sorted_tables if t is not projection_tracking
)
RUN_STARTED = get_topic(Run.RunStarted)
RUN_FINISHED = get_topic(Run.RunFinished)


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivatePostgres]:
    with private_postgres() as found:
        yield found


@pytest.fixture
def served(cluster: PrivatePostgres) -> Settings:
    if not cluster.accepts_connections():  # a failed test may have left it stopped
        cluster.start()
    chosen = Settings(
        database_url=cluster.url,
        database_schema=f"restart_{uuid4().hex[:8]}",
        db_connect_timeout=1,  # fail fast (and keep the test short)
        max_concurrent_runs=64,  # a refusal here is about the database, not the cap
        projection_poll=0.2,
        feed_poll=0.2,
    )
    bootstrap(chosen, create=True, sample=True).close()  # what `harness db init --sample` does
    return chosen


# -- what the clients were told ---------------------------------------------------------------


@dataclass
class Told:
    """Everything the clients saw, shared by their threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: dict[str, str] = field(default_factory=dict)
    """run id → how its start was acknowledged ("chat": metadata received, "runs": 202)."""
    streams: dict[str, list[Event]] = field(default_factory=dict)
    """run id → what its chat stream delivered, in order."""
    refusals: list[tuple[int, str | None, str]] = field(default_factory=list)
    """(status, Retry-After, body) of every answer that was not a success."""
    failures: list[str] = field(default_factory=list)
    """Transport errors and broken streams: each one is a hang or a traceback to a client."""
    succeeded_after: dict[int, int] = field(default_factory=dict)
    """client → runs it started after the restart that succeeded."""
    spanning: list[str] = field(default_factory=list)
    """Chat streams that had their metadata before the stop and ended after the restart."""
    stopped: bool = False
    restarted: bool = False

    def refused(self, response: httpx.Response) -> None:
        with self.lock:
            self.refusals.append(
                (response.status_code, response.headers.get("retry-after"), response.text)
            )

    def succeeded(self, client: int, run_id: str, how: str, started_after_restart: bool) -> None:
        with self.lock:
            self.acknowledged[run_id] = how
            if started_after_restart:
                self.succeeded_after[client] = self.succeeded_after.get(client, 0) + 1


def _chat(client: httpx.Client, who: int, told: Told) -> None:
    after_restart = told.restarted
    with client.stream("POST", "/v1/chat", json={"query": QUESTION}) as response:
        if response.status_code != 200:
            response.read()
            told.refused(response)
            return
        seen: list[Event] = []
        opened_before_stop = False
        for event in events(response):
            seen.append(event)
            if event.event == "metadata":
                opened_before_stop = not told.stopped
                with told.lock:
                    told.acknowledged[event.data["run_id"]] = "chat"
                    told.streams[event.data["run_id"]] = seen
    if opened_before_stop and told.restarted and seen[-1].event == "done":
        with told.lock:
            told.spanning.append(seen[0].data["run_id"])
    if not seen or seen[-1].event not in ("done", "unavailable"):
        with told.lock:
            told.failures.append(f"client {who}: a chat stream ended early: {seen}")
    elif seen[-1].event == "done" and seen[-1].data["release_outcome"] == "SUCCESS":
        told.succeeded(who, seen[0].data["run_id"], "chat", after_restart)


def _detached(client: httpx.Client, who: int, told: Told) -> None:
    after_restart = told.restarted
    response = client.post("/v1/runs", json={"query": "How do I roll back a deployment?"})
    if response.status_code != 202:
        told.refused(response)
        return
    told.succeeded(who, response.json()["run_id"], "runs", after_restart)


def _client(base: str, who: int, told: Told, stop: threading.Event) -> None:
    ask = _chat if who % 2 == 0 else _detached
    with httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as client:
        while not stop.is_set():
            refusals = len(told.refusals)
            try:
                ask(client, who, told)
            except httpx.HTTPError as error:
                with told.lock:
                    told.failures.append(f"client {who}: {type(error).__name__}: {error}")
            if len(told.refusals) > refusals:
                stop.wait(PACE_S)


# -- waiting and checking -----------------------------------------------------------------------


def _wait_until(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(POLL_S)


@dataclass
class Held:
    """The lock on the event table taken over the outage, and what it held back."""

    holder: psycopg.Connection[Any]
    runs: list[str]
    """Runs whose chat stream was open and whose ``RUN_FINISHED`` was not in the log."""
    head: int
    """The log's last position under the lock: anything appended later is after the outage."""


def _hold_a_chat_in_flight(cluster: PrivatePostgres, settings: Settings, told: Told) -> Held:
    """Lock the event table while a chat stream is open on an unfinished run.

    So at least one streamed run is in flight over the outage, its next write waiting for the
    lock when the server stops, however fast runs are (a run is tens of milliseconds). When no
    open stream's run is left unfinished under the lock, let go and look again.
    """
    table = sql.Identifier(settings.database_schema, "harness_events")
    finished = sql.SQL(
        "SELECT DISTINCT originator_id FROM {} WHERE topic = %s AND originator_id = ANY(%s)"
    ).format(table)
    deadline = time.monotonic() + DEADLINE_S
    while True:
        assert time.monotonic() < deadline, "no chat stream was open to hold over the outage"
        holder = psycopg.connect(cluster.url)
        holder.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(table))
        with told.lock:
            open_runs = [UUID(r) for r, seen in told.streams.items() if seen[-1].event != "done"]
        done = {str(row[0]) for row in holder.execute(finished, (RUN_FINISHED, open_runs))}
        held = [str(run) for run in open_runs if str(run) not in done]
        if held:
            top = holder.execute(sql.SQL("SELECT max(notification_id) FROM {}").format(table))
            return Held(holder, held, int((top.fetchone() or (0,))[0] or 0))
        holder.close()
        time.sleep(POLL_S)


def _finished_at(store: HarnessStore, run_id: str) -> int:
    """The log position of the run's ``RUN_FINISHED`` (0: none)."""
    page = store.recorder.select_notifications(start=1, limit=100_000, topics=[RUN_FINISHED])
    return next((n.id for n in page if str(n.originator_id) == run_id), 0)


def _runs_in_log(store: HarnessStore) -> list[str]:
    """The id of every run the log has a ``RUN_STARTED`` of."""
    found: list[str] = []
    start = 1
    while page := store.recorder.select_notifications(
        start=start, limit=1000, topics=[RUN_STARTED]
    ):
        found.extend(str(store.mapper.to_domain_event(n).originator_id) for n in page)
        start = page[-1].id + 1
    return found


def _all_ended(store: HarnessStore, run_ids: list[str]) -> bool:
    return all(store.get_run(UUID(r)).finished_outcome is not None for r in run_ids)


def _caught_up(client: httpx.Client) -> bool:
    answer = client.get("/v1/projections").json()
    return all(p["position"] == answer["head"] for p in answer["data"])


def _dump(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    with engine.connect() as connection:
        return {
            t.name: [tuple(r) for r in connection.execute(select(t).order_by(*t.primary_key))]
            for t in READ_TABLES
        }


class _Tracebacks(logging.Handler):
    """Collects every log record that carries a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.found: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.found.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def tracebacks() -> Iterator[_Tracebacks]:
    handler = _Tracebacks()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


# -- the test -----------------------------------------------------------------------------------


def test_a_postgres_restart_under_load_loses_nothing_and_the_service_recovers(
    cluster: PrivatePostgres, served: Settings, tracebacks: _Tracebacks
) -> None:
    settings = served
    told, stop = Told(), threading.Event()
    with serving(settings) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as probe:
        clients = [
            threading.Thread(target=_client, args=(base, who, told, stop), name=f"client-{who}")
            for who in range(CLIENTS)
        ]
        for thread in clients:
            thread.start()
        try:
            _wait_until("runs before the restart", lambda: len(told.acknowledged) >= 2 * CLIENTS)

            held = _hold_a_chat_in_flight(cluster, settings, told)
            told.stopped = True
            # Immediate, not fast: a fast stop terminates the lock's holder and the held writer in
            # turn, and in between the writer can take the lock and commit (the run then ends
            # before the outage). An immediate stop ends every backend without releasing a lock.
            cluster.stop(mode="immediate")
            with contextlib.suppress(psycopg.Error):
                held.holder.close()
            before = len(told.refusals)
            _wait_until(
                "503s while the database is down", lambda: len(told.refusals) >= before + CLIENTS
            )
            ready = probe.get("/readyz")
            assert ready.status_code == 503 and ready.headers["retry-after"], ready.text

            # before the start: a run held over the outage may finish, and its stream read `done`
            # (handed on as the append commits), before start() returns
            told.restarted = True
            cluster.start()
            _wait_until(
                "every client to succeed again after the restart",
                lambda: len(told.succeeded_after) == CLIENTS,
            )
        finally:
            stop.set()
            for thread in clients:
                thread.join(DEADLINE_S)
        assert not [t.name for t in clients if t.is_alive()], "a client hung"

        assert not told.failures, told.failures
        assert told.refusals, "no request was refused while the database was down"
        for status, retry_after, body in told.refusals:
            assert status == 503, (status, body)
            assert retry_after is not None and int(retry_after) > 0, body
            assert "database is unavailable" in body, body
        assert probe.get("/readyz").status_code == 200

        checking = bootstrap(settings)
        store = checking.store
        try:
            in_log = _runs_in_log(store)
            assert set(told.acknowledged) <= set(in_log), "an acknowledged run is not in the log"
            _wait_until("every run in the log to end", lambda: _all_ended(store, in_log))
            _wait_until("the projections to reach the head", lambda: _caught_up(probe))
            answer = probe.get("/v1/projections").json()
            assert answer["head"] == store.head()
            for projection in answer["data"]:  # neither ahead of nor behind the log
                assert (projection["position"], projection["lag"]) == (answer["head"], 0)

            # The runs held back by the lock were in flight when the database stopped: each ended
            # after it, FAILED (INTERNAL_ERROR) once the store answered again, or through the one
            # retry after a lost connection when that reached the restarted server.
            for run_id in held.runs:
                assert _finished_at(store, run_id) > held.head, run_id
                ending = store.get_run(UUID(run_id)).termination
                assert ending is not None, run_id
            streams = {r: [e.event for e in told.streams[r]] for r in held.runs}
            assert set(held.runs) <= set(told.spanning), (
                "open over the outage, then done",
                streams,
            )
            for run_id in told.acknowledged:
                run = store.get_run(UUID(run_id))
                assert run.termination is not None and run.finished_outcome is not None
                outcome = run.finished_outcome.value
                feed = read_all(probe, "GET", f"/v1/runs/{run_id}/stream")
                check_feed(feed, outcome)
                seen = [e for e in told.streams.get(run_id, []) if e.event != "unavailable"]
                assert feed[: len(seen)] == seen, run_id  # what the client saw is the log's
                row = probe.get(f"/v1/runs/{run_id}").json()
                assert (row["termination_state"], row["release_outcome"]) == (
                    run.termination.state.value,
                    outcome,
                )
        finally:
            checking.close()

        with bootstrap(settings) as dumping:
            live = _dump(dumping.engine)
            rebuilt = probe.post("/v1/projections/rebuild")
            assert rebuilt.status_code == 200, rebuilt.text
            assert _dump(dumping.engine) == live  # the read tables are exactly the log's
    assert not tracebacks.found, tracebacks.found


# -- streams over an outage ---------------------------------------------------------------------


def test_a_waiting_stream_ends_with_unavailable_and_resumes_after_the_restart(
    cluster: PrivatePostgres, served: Settings
) -> None:
    settings = served.model_copy(update={"model": HANGS, "sse_keepalive": 0.3})
    with serving(settings) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as client:
        created = client.post("/v1/runs", json={"query": QUESTION})
        assert created.status_code == 202, created.text
        stream = created.json()["stream"]
        seen: list[Event] = []
        with client.stream("GET", stream) as response:
            for event in events(response):
                seen.append(event)
                if event.data.get("status") == "DIAGNOSIS_RUNNING":  # the model hangs now
                    cluster.stop()
        cluster.start()

        *entries, last = seen
        assert last.event == "unavailable" and last.id is None, seen  # not a feed entry
        assert last.data["run_id"] == created.json()["run_id"]
        assert last.data["retry_after"] > 0 and "Last-Event-ID" in last.data["detail"]
        # The run was cut by the outage and ends once the store answers; resuming gets the rest.
        rest = _resumed(client, stream, entries[-1].id)
        check_feed(entries + rest, "FAILED")


def _resumed(client: httpx.Client, stream: str, after: int | None) -> list[Event]:
    """The feed after entry ``after``, asked again while the service reconnects (bounded)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        with client.stream("GET", stream, headers={"Last-Event-ID": str(after)}) as response:
            if response.status_code == 200:
                return list(events(response))
            response.read()
            assert response.status_code == 503, response.text  # reconnecting: retry shortly
        assert time.monotonic() < deadline, "the stream never came back"
        time.sleep(POLL_S)


async def _follow_across_restart(hub: FeedHub, run_id: str, cluster: PrivatePostgres) -> list[str]:
    chunks: list[str] = []
    async for chunk in follow(hub, run_id, 0, keepalive=5.0):
        chunks.append(chunk)
        if len(chunks) == 1:  # the first try failed: bring the database back
            await anyio.to_thread.run_sync(cluster.start)
    return chunks


async def _follow_all(hub: FeedHub, run_id: str) -> list[str]:
    return [chunk async for chunk in follow(hub, run_id, 0, keepalive=0.2)]


def test_a_stream_whose_reads_fail_retries_and_goes_on_or_ends_with_unavailable(
    cluster: PrivatePostgres, served: Settings
) -> None:
    with serving(served) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as client:
        feed = read_all(client, "POST", "/v1/chat", json={"query": QUESTION})
    check_feed(feed, "SUCCESS")
    run_id = feed[0].data["run_id"]
    following = bootstrap(served)
    hub = FeedHub(following.engine, threading.Event(), 0.1)
    try:
        cluster.stop()
        chunks = asyncio.run(_follow_across_restart(hub, run_id, cluster))
        assert chunks[0] == ": the database is unavailable; retrying\n\n"
        assert "".join(chunks[1:]) == "".join(frame_of(e) for e in feed)  # then all of it

        cluster.stop()
        chunks = asyncio.run(_follow_all(hub, run_id))  # it never comes back
        assert set(chunks[:-1]) == {": the database is unavailable; retrying\n\n"}
        assert chunks[-1].startswith("event: unavailable\n")
    finally:
        if not cluster.accepts_connections():
            cluster.start()
        following.close()


def frame_of(event: Event) -> str:
    """An event as the service frames it (the client's parse of it, framed back)."""
    return frame({"seq": event.id, "event": event.event, "data": event.data})
