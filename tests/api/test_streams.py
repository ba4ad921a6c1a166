"""The chat API over real HTTP: a real uvicorn server, a real streaming client, a real store.

SPEC §11: metadata → status* → (content | failure) → done, an ``id`` on every event, content at
most once, the metadata's identity on every event, nothing after the end, no public CANCELLED
``done``; a client leaving mid-run cancels it; ``Last-Event-ID`` resumes; watchers share a feed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from infrastructure.settings import Settings
from tests.api._serve import TIMEOUT, Event, Served, events, read_all, served_client

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
HANGS = f"scripted:{SCENARIOS / 'client_disconnected.yaml'}"
"""Routes to DIAGNOSIS, then the model never answers until the run is cancelled."""
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"


@pytest.fixture
def offline(sqlite_settings: Settings) -> Iterator[Served]:
    """The app with the offline model on the sample data, as `harness serve` runs it."""
    with served_client(sqlite_settings) as running:
        yield running


@pytest.fixture
def hanging(sqlite_settings: Settings) -> Iterator[Served]:
    """The app whose model hangs once the run diagnoses, until the run is cancelled."""
    with served_client(sqlite_settings.model_copy(update={"model": HANGS})) as running:
        yield running


def check_feed(feed: list[Event], outcome: str) -> None:
    """The SPEC §11 rules over one complete feed."""
    kinds = [e.event for e in feed]
    assert kinds[0] == "metadata", kinds
    assert [e.id for e in feed] == list(range(1, len(feed) + 1))
    identity = {k: feed[0].data[k] for k in ("session_id", "run_id")}
    assert all({k: e.data[k] for k in identity} == identity for e in feed)
    body = kinds[1:]
    while body and body[0] == "status":
        body = body[1:]
    if outcome == "CANCELLED":
        assert body == ["failure"], kinds  # no public CANCELLED done
    elif outcome == "FAILED":
        assert body == ["failure", "done"], kinds
    else:
        assert body == ["content", "done"], kinds
    assert feed[-1].data["release_outcome"] == outcome


def test_a_chat_streams_its_run_in_order_with_ids_and_one_identity(
    offline: Served,
) -> None:
    client = offline.client
    with client.stream("POST", "/v1/chat", json={"query": QUESTION}) as response:
        assert response.status_code == 200
        assert response.headers["x-accel-buffering"] == "no"
        assert response.headers["cache-control"] == "no-cache"
        feed = list(events(response))
        location = response.headers["location"]
    check_feed(feed, "SUCCESS")
    content = next(e for e in feed if e.event == "content")
    assert content.data["content"]["kind"] == "diagnosis"
    assert location == f"/v1/runs/{feed[0].data['run_id']}"

    run = client.get(location).json()
    assert (run["status"], run["release_outcome"], run["termination_state"]) == (
        "SUCCESS",
        "SUCCESS",
        "SUCCESS",
    )
    assert run["published_result"] == content.data["content"]


def test_leaving_mid_run_cancels_it_and_no_done_is_ever_published(
    hanging: Served,
) -> None:
    client = hanging.client
    seen: list[Event] = []
    with client.stream("POST", "/v1/chat", json={"query": QUESTION}) as response:
        for event in events(response):
            seen.append(event)
            if event.data.get("status") == "DIAGNOSIS_RUNNING":
                break  # the model hangs from here on: leave mid-run
    run_id = seen[0].data["run_id"]

    feed = read_all(client, "GET", f"/v1/runs/{run_id}/stream")  # ends when the feed ends
    check_feed(feed, "CANCELLED")
    assert feed[: len(seen)] == seen
    run = client.get(f"/v1/runs/{run_id}").json()
    assert (run["status"], run["termination_state"], run["termination_reason"]) == (
        "CANCELLED",
        "CANCELLED",
        "CLIENT_DISCONNECTED",
    )
    explained = client.get(f"/v1/runs/{run_id}/explain").json()
    no_done = next(a for a in explained["answers"] if a["question"] == "why_no_done")
    assert no_done["applies"] is True


def test_resuming_after_each_event_id_yields_exactly_the_missing_events(
    offline: Served,
) -> None:
    client = offline.client
    created = client.post("/v1/runs", json={"query": QUESTION})
    assert created.status_code == 202
    stream = created.json()["stream"]
    full = read_all(client, "GET", stream)
    check_feed(full, "SUCCESS")
    for seen in range(len(full)):
        resumed = read_all(client, "GET", stream, headers={"Last-Event-ID": str(seen)})
        assert resumed == full[seen:], seen
    after_all = client.get(stream, headers={"Last-Event-ID": str(len(full))})
    assert after_all.status_code == 204  # nothing more, ever: an EventSource stops


def test_two_watchers_see_the_same_feed_and_a_watcher_leaving_cancels_nothing(
    hanging: Served,
) -> None:
    client = hanging.client
    run_id = client.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]
    stream = f"/v1/runs/{run_id}/stream"

    with client.stream("GET", stream) as leaving:  # a watcher that leaves early
        assert next(events(leaving)).event == "metadata"

    feeds: list[list[Event]] = [[], []]
    connected = [threading.Event(), threading.Event()]

    def watch(index: int) -> None:
        with (
            httpx.Client(base_url=client.base_url, timeout=TIMEOUT) as own,
            own.stream("GET", stream) as response,
        ):
            for event in events(response):
                feeds[index].append(event)
                if event.data.get("status") == "DIAGNOSIS_RUNNING":
                    connected[index].set()

    watchers = [threading.Thread(target=watch, args=(i,)) for i in range(2)]
    for thread in watchers:
        thread.start()
    for flag in connected:
        assert flag.wait(60), "a watcher never saw the run diagnosing"
    assert client.get(f"/v1/runs/{run_id}").json()["status"] == "RUNNING"

    cancelled = client.post(f"/v1/runs/{run_id}/cancel").json()
    assert cancelled["cancelled"] is True
    assert cancelled["termination_reason"] == "USER_REQUESTED"
    for thread in watchers:
        thread.join(60)
    assert feeds[0] == feeds[1]
    check_feed(feeds[0], "CANCELLED")
    run = client.get(f"/v1/runs/{run_id}").json()
    assert (run["status"], run["termination_reason"]) == ("CANCELLED", "USER_REQUESTED")


def test_a_second_cancel_reports_the_first_termination(
    offline: Served,
) -> None:
    client = offline.client
    run_id = client.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]
    read_all(client, "GET", f"/v1/runs/{run_id}/stream")
    answer = client.post(f"/v1/runs/{run_id}/cancel")
    assert answer.status_code == 200
    assert answer.json() == {
        "run_id": run_id,
        "cancelled": False,
        "termination_state": "SUCCESS",
        "termination_reason": "COMPLETED",
        "position": None,
    }


def test_a_burst_of_chats_is_admitted_only_up_to_the_stream_cap(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    """The cap holds under a burst: requests that arrive together are counted as admitted.

    Each admitted stream is held open until every request has its answer, so a place is never
    freed in between: exactly ``max_streams`` chats run, the others are refused and start nothing.
    """
    burst, cap = 8, 2
    # every run hangs, however the runs' steps interleave (the scripted steps are shared)
    scenario = tmp_path / "hangs.yaml"
    scenario.write_text("route: DIAGNOSIS\nsteps:\n" + "  - {hang: true}\n" * burst)
    settings = sqlite_settings.model_copy(
        update={"model": f"scripted:{scenario}", "max_streams": cap}
    )
    answered = threading.Barrier(burst, timeout=TIMEOUT.read)
    statuses: list[int] = []
    with served_client(settings) as served:
        client = served.client

        def chat() -> None:  # a client of its own: one httpx client is not shared by threads
            with (
                httpx.Client(base_url=client.base_url, timeout=TIMEOUT) as own,
                own.stream("POST", "/v1/chat", json={"query": QUESTION}) as response,
            ):
                statuses.append(response.status_code)
                feed = events(response)  # kept: a feed dropped closes its response
                if response.status_code == 200:
                    assert next(feed).event == "metadata"
                answered.wait()  # every answer is in before any admitted stream ends

        threads = [threading.Thread(target=chat) for _ in range(burst)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT.read)
        assert sorted(statuses) == [200] * cap + [429] * (burst - cap)
        started = client.get("/v1/runs").json()
        assert started["count"] == cap, "a refused chat started a run"


def _problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert "detail" in body
    return body


def test_beyond_the_stream_cap_a_watcher_or_a_chat_is_refused_with_retry_after(
    sqlite_settings: Settings,
) -> None:
    """Each open stream costs the worker memory and a descriptor: no client may pile them up."""
    settings = sqlite_settings.model_copy(update={"model": HANGS, "max_streams": 2})
    with served_client(settings) as served, ExitStack() as open_streams:
        client = served.client
        run_id = client.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]
        stream = f"/v1/runs/{run_id}/stream"
        feeds = [events(open_streams.enter_context(client.stream("GET", stream))) for _ in "ab"]
        for feed in feeds:  # each kept open: a feed dropped closes its response
            assert next(feed).event == "metadata"  # being sent: it counts
        refused = client.get(stream)
        assert _problem(refused, 429)["detail"].startswith("this worker already sends its 2")
        assert refused.headers["Retry-After"]
        runs_before = client.get("/v1/runs").json()["count"]
        refused = client.post("/v1/chat", json={"query": QUESTION})
        assert _problem(refused, 429) and refused.headers["Retry-After"]
        assert client.get("/v1/runs").json()["count"] == runs_before, "a refused chat ran"
        assert client.post(f"/v1/runs/{run_id}/cancel").json()["cancelled"] is True
