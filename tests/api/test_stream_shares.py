"""One key cannot take every event stream (HARNESS_MAX_STREAMS_PER_KEY); the limits in /metrics.

With ``HARNESS_MAX_STREAMS=5``, one user's five streams of their own run left another user a
429 on chat. Real uvicorn, real keys, real streaming clients held open while the runs hang.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from infrastructure.settings import ApiKey, Settings
from tests.api._serve import Event, Served, events, served_client
from tests.api.test_auth import ADAM, ANN, AUDREY, BOB, KEYS, ROLES
from tests.api.test_metrics import scrape, value
from tests.api.test_streams import QUESTION

API_KEYS = [ApiKey(key=SecretStr(KEYS[name]), name=name, role=role) for name, role in ROLES.items()]


def as_(name: str) -> dict[str, str]:
    """The headers of a request made with ``name``'s key."""
    return {"Authorization": f"Bearer {KEYS[name]}"}


@pytest.fixture
def hanging(sqlite_settings: Settings, tmp_path: Path) -> Iterator[Settings]:
    """Four keys (two users, an auditor, an admin) and a model whose runs all hang."""
    scenario = tmp_path / "hangs.yaml"  # the scripted steps are shared: one hang per run
    scenario.write_text("route: DIAGNOSIS\nsteps:\n" + "  - {hang: true}\n" * 8)
    yield sqlite_settings.model_copy(
        update={"model": f"scripted:{scenario}", "api_keys": API_KEYS, "max_streams": 5}
    )


def watch(streams: ExitStack, client: httpx.Client, name: str, url: str) -> Iterator[Event]:
    """Open a stream as ``name`` and keep it open (a feed dropped closes its response)."""
    response = streams.enter_context(client.stream("GET", url, headers=as_(name)))
    assert response.status_code == 200, response.read()
    feed = events(response)
    assert next(feed).event == "metadata"  # being sent: it counts
    return feed


def start(served: Served, name: str) -> str:
    """Start a run as ``name``; its stream's URL."""
    created = served.client.post("/v1/runs", json={"query": QUESTION}, headers=as_(name))
    assert created.status_code == 202, created.text
    stream: str = created.json()["stream"]
    return stream


def test_one_key_holds_at_most_its_share_and_another_user_may_still_chat(
    hanging: Settings,
) -> None:
    """The default share is half the worker's streams (3 of 5) once there are two keys."""
    with served_client(hanging) as served, ExitStack() as streams:
        client = served.client
        mine = start(served, ANN)
        feeds = [watch(streams, client, ANN, mine) for _ in range(3)]  # kept: each stays open
        refused = client.get(mine, headers=as_(ANN))
        assert refused.status_code == 429, refused.text
        detail = refused.json()["detail"]
        assert detail.startswith("ann already has 3 event streams open on this worker"), detail
        assert "HARNESS_MAX_STREAMS_PER_KEY" in detail and refused.headers["Retry-After"]

        chat = streams.enter_context(
            client.stream("POST", "/v1/chat", json={"query": QUESTION}, headers=as_(BOB))
        )
        assert chat.status_code == 200, chat.read()
        feeds.append(events(chat))
        assert next(feeds[-1]).event == "metadata"
        # the worker is 4 of 5 full: the last place is Bob's or the auditor's, never Ann's
        assert client.get(mine, headers=as_(ANN)).status_code == 429
        feeds.append(watch(streams, client, AUDREY, mine))  # an auditor watches Ann's: the fifth
        full = client.get(mine, headers=as_(ADAM))
        assert full.status_code == 429 and "(HARNESS_MAX_STREAMS)" in full.json()["detail"]

        series = scrape(client, Authorization=as_(AUDREY)["Authorization"])
        by_key = {
            dict(labels)["key"]: open_now
            for (name, labels), open_now in series.items()
            if name == "harness_sse_streams_open_by_key"
        }
        assert by_key == {ANN: 3, BOB: 1, AUDREY: 1}  # a key's series from its first stream on
        assert value(series, "harness_sse_streams_open") == 5
        assert value(series, "harness_sse_streams_limit") == 5
        assert value(series, "harness_sse_streams_per_key_limit") == 3
        assert value(series, "harness_runs_limit") == 8
        assert value(series, "harness_runs_per_key_limit") == 4
        assert all(feeds)
        for run in client.get("/v1/runs", headers=as_(ADAM)).json()["data"]:
            client.post(f"/v1/runs/{run['run_id']}/cancel", headers=as_(ADAM))


def test_a_keys_ended_stream_gives_its_place_back_to_that_key(hanging: Settings) -> None:
    settings = hanging.model_copy(update={"max_streams_per_key": 1})
    with served_client(settings) as served:
        client = served.client
        mine = start(served, ANN)
        with ExitStack() as first:
            feed = watch(first, client, ANN, mine)
            refused = client.get(mine, headers=as_(ANN))
            assert refused.status_code == 429
            assert refused.json()["detail"].startswith("ann already has 1 event streams open")
            assert feed  # held open until here
        with ExitStack() as again:  # the first has left: its place is Ann's again
            feed = watch(again, client, ANN, mine)
            series = scrape(client, Authorization=as_(AUDREY)["Authorization"])
            assert value(series, "harness_sse_streams_open_by_key", key=ANN) == 1
            assert value(series, "harness_sse_streams_per_key_limit") == 1
            assert feed
        client.post(mine.removesuffix("/stream") + "/cancel", headers=as_(ANN))
