"""A browser's EventSource on ``GET /v1/runs/{id}/stream`` stops once the run's feed has ended.

The stream ends after the feed's last entry; the EventSource reconnects once with Last-Event-ID
and is answered 204, which makes it stop (WHATWG), with every event seen exactly once.
Also: ``POST /v1/runs`` answers 202 with the run's ``Location``.
"""

from __future__ import annotations

from tests.api._eventsource import DEFAULT_RETRY_MS, EventSource
from tests.api._serve import Event, Served, read_all
from tests.api.test_streams import QUESTION, check_feed, hanging, offline

__all__ = ["hanging", "offline"]  # the fixtures, shared with test_streams


def _check_stopped_after_one_reconnection(source: EventSource, outcome: str) -> None:
    check_feed(source.events, outcome)  # ids 1..n: none twice, none missing
    first, second = source.connections
    assert (first.last_event_id, first.status) == (None, 200)
    assert first.events == len(source.events)
    assert (second.last_event_id, second.status, second.events) == (
        str(source.events[-1].id),
        204,
        0,
    )


def test_an_event_source_on_a_successful_run_stops_after_one_reconnection(
    offline: Served,
) -> None:
    client = offline.client
    created = client.post("/v1/runs", json={"query": QUESTION})
    waits: list[int] = []
    source = EventSource(client, created.json()["stream"], wait=waits.append)
    source.run()
    _check_stopped_after_one_reconnection(source, "SUCCESS")
    assert waits == [DEFAULT_RETRY_MS]
    assert read_all(client, "GET", created.json()["stream"]) == source.events


def test_an_event_source_on_a_cancelled_run_stops_after_one_reconnection(
    hanging: Served,
) -> None:
    client = hanging.client
    run_id = client.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]

    def cancel_once_diagnosing(event: Event) -> None:
        if event.data.get("status") == "DIAGNOSIS_RUNNING":  # the model hangs from here on
            assert client.post(f"/v1/runs/{run_id}/cancel").json()["cancelled"] is True

    source = EventSource(client, f"/v1/runs/{run_id}/stream", on_event=cancel_once_diagnosing)
    source.run()
    _check_stopped_after_one_reconnection(source, "CANCELLED")
    assert source.events[-1].data["release_outcome"] == "CANCELLED"


def test_a_resumed_finished_feed_answers_204_only_after_its_last_event(
    offline: Served,
) -> None:
    client = offline.client
    stream = client.post("/v1/runs", json={"query": QUESTION}).json()["stream"]
    full = read_all(client, "GET", stream)
    last = full[-1].id
    assert last is not None
    assert read_all(client, "GET", stream, headers={"Last-Event-ID": str(last - 1)}) == [full[-1]]
    for after in (last, last + 1, 10**18 - 1):
        answer = client.get(stream, headers={"Last-Event-ID": str(after)})
        assert (answer.status_code, answer.content) == (204, b""), after


def test_starting_a_run_answers_202_with_its_location(
    offline: Served,
) -> None:
    client = offline.client
    created = client.post("/v1/runs", json={"query": QUESTION})
    assert created.status_code == 202
    run_id = created.json()["run_id"]
    assert created.headers["location"] == f"/v1/runs/{run_id}"
    assert client.get(created.headers["location"]).json()["run_id"] == run_id
    document = client.get("/openapi.json").json()
    headers = document["paths"]["/v1/runs"]["post"]["responses"]["202"]["headers"]
    assert set(headers) == {"Location"}


def test_a_feed_whose_ending_was_made_ahead_of_its_table_answers_204_after_it(
    hanging: Served,
) -> None:
    """An EventSource may resume after ``done`` before the feed's table has it (the entry went
    out as soon as this process made it): the worker that made it answers 204 all the same."""
    client = hanging.client
    run_id = client.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]
    stream = f"/v1/runs/{run_id}/stream"
    hub = hanging.app.state.worker.hub
    ending = {"run_id": run_id, "seq": 40, "position": 1, "event": "done", "data": {}}
    hub.ahead([ending])  # as the appending thread hands a run's last entry over, table behind
    assert (hub.ended_ahead(run_id, 39), hub.ended_ahead(run_id, 40)) == (False, True)
    for after in (40, 41):
        answer = client.get(stream, headers={"Last-Event-ID": str(after)})
        assert (answer.status_code, answer.content) == (204, b""), after
    with client.stream("GET", stream, headers={"Last-Event-ID": "3"}) as still_open:
        assert still_open.status_code == 200  # before the ending: the feed goes on
    assert client.post(f"/v1/runs/{run_id}/cancel").json()["cancelled"] is True
