"""Bad input over real HTTP: a clear answer naming what was wrong, and nothing recorded."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any, get_args

import httpx
import psycopg
import pytest
from psycopg import sql
from pydantic import SecretStr

from api.routes.system import ProjectionName
from application.store import HarnessStore
from infrastructure.settings import ApiKey, Settings
from infrastructure.version import harness_version
from projections.runner import all_projections
from tests.api._serve import Served, events, served_client
from tests.api.test_streams import HANGS, QUESTION
from tests.conftest import PG_URL

UNKNOWN = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def settings(sqlite_settings: Settings) -> Settings:
    """The app's own answers: one store is enough (``served`` serves it)."""
    return sqlite_settings


def _problem(response: httpx.Response, status: int) -> Any:
    """The ``detail`` of an RFC 9457 problem of ``status`` (its other members checked)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert (body["type"], body["status"]) == ("about:blank", status)
    assert body["title"] == HTTPStatus(status).phrase
    return body["detail"]


def _fields(detail: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {tuple(error["loc"]) for error in detail}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, ("body", "query")),
        ({"query": ""}, ("body", "query")),
        ({"query": " \u0085\t"}, ("body", "query")),
        ({"query": 42}, ("body", "query")),
        ({"query": "x" * 4001}, ("body", "query")),
        ({"query": "q", "colour": "red"}, ("body", "colour")),
        ({"query": "q", "session_id": "has space"}, ("body", "session_id")),
        ({"query": "q", "session_id": "s" * 201}, ("body", "session_id")),
        ({"query": "q", "deadline_s": -1}, ("body", "deadline_s")),
        ({"query": "q", "deadline_s": 10_000}, ("body", "deadline_s")),
        ({"query": "q", "budget": {"tokens": 0}}, ("body", "budget", "tokens")),
        ({"query": "q", "budget": {"tool_calls": 10**9}}, ("body", "budget", "tool_calls")),
        ({"query": "q", "budget": {"dollars": 1}}, ("body", "budget", "dollars")),
        # JSON's numbers only: true is not 1 and "3" is not 3; 2.5 is no whole number
        ({"query": "q", "budget": {"tokens": True}}, ("body", "budget", "tokens")),
        ({"query": "q", "budget": {"model_calls": False}}, ("body", "budget", "model_calls")),
        ({"query": "q", "budget": {"tool_calls": "3"}}, ("body", "budget", "tool_calls")),
        ({"query": "q", "budget": {"bytes": 2.5}}, ("body", "budget", "bytes")),
        ({"query": "q", "budget": {"tokens": [1]}}, ("body", "budget", "tokens")),
        ({"query": "q", "deadline_s": True}, ("body", "deadline_s")),
        ({"query": "q", "deadline_s": "30"}, ("body", "deadline_s")),
    ],
)
def test_a_bad_run_request_names_its_field_and_records_nothing(
    served: Served, body: dict[str, Any], field: tuple[str, ...]
) -> None:
    client, store = served.client, served.store
    head = store.head()
    for path in ("/v1/runs", "/v1/chat"):
        detail = _problem(client.post(path, json=body), 422)
        assert field in _fields(detail), (path, detail)
    assert store.head() == head


def test_a_boolean_number_is_refused_naming_its_field_and_a_json_number_is_taken(
    served: Served,
) -> None:
    """``{"budget": {"tokens": true}}`` was taken as a budget of 1 token."""
    client = served.client
    for body, field in (
        ({"budget": {"tokens": True}}, ["body", "budget", "tokens"]),
        ({"deadline_s": False}, ["body", "deadline_s"]),
    ):
        answer = client.post("/v1/runs", json={"query": "hello", **body})
        (error,) = _problem(answer, 422)
        assert error["loc"] == field
        assert error["msg"] == "Input should be a number, not true or false"
    text = client.post("/v1/runs", json={"query": "hello", "budget": {"bytes": "10"}})
    assert _problem(text, 422)[0]["msg"] == "Input should be a number, not text"
    for budget, deadline in (({"tokens": 5000}, 30), ({"tokens": 5000.0}, 30.5)):
        # what JSON Schema calls an integer, as the document says: 5000.0 too
        taken = client.post(
            "/v1/runs", json={"query": "hello", "budget": budget, "deadline_s": deadline}
        )
        assert taken.status_code == 202, taken.text


def test_a_body_that_is_not_json_is_a_422(served: Served) -> None:
    client, store = served.client, served.store
    head = store.head()
    answer = client.post(
        "/v1/runs", content=b"{not json", headers={"content-type": "application/json"}
    )
    _problem(answer, 422)
    assert store.head() == head


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    served: Served,
) -> None:
    client, store = served.client, served.store
    head = store.head()
    huge = {"query": "x" * 70_000}
    assert "bytes" in _problem(client.post("/v1/runs", json=huge), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"query": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'"}'

    streamed = client.post(
        "/v1/runs", content=chunks(), headers={"content-type": "application/json"}
    )
    _problem(streamed, 413)
    assert store.head() == head


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "9" * 30, "1 2"])
def test_a_malformed_last_event_id_is_a_400(served: Served, value: str) -> None:
    client = served.client
    run_id = client.post("/v1/runs", json={"query": "hello"}).json()["run_id"]
    detail = _problem(
        client.get(f"/v1/runs/{run_id}/stream", headers={"Last-Event-ID": value}), 400
    )
    assert "Last-Event-ID" in detail


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"/v1/runs/{UNKNOWN}"),
        ("GET", f"/v1/runs/{UNKNOWN}/stream"),
        ("GET", f"/v1/runs/{UNKNOWN}/trace"),
        ("GET", f"/v1/runs/{UNKNOWN}/explain"),
        ("POST", f"/v1/runs/{UNKNOWN}/cancel"),
        ("GET", "/v1/sessions/nobody-s-session"),
    ],
)
def test_unknown_ids_are_404_naming_the_id(served: Served, method: str, path: str) -> None:
    client = served.client
    detail = _problem(client.request(method, path), 404)
    assert UNKNOWN in detail or "nobody-s-session" in detail


def test_an_id_that_is_not_a_uuid_is_a_422(served: Served) -> None:
    client = served.client
    assert ("path", "run_id") in _fields(_problem(client.get("/v1/runs/not-a-uuid"), 422))


@pytest.mark.parametrize(
    "query",
    ["limit=0", "limit=201", "offset=-1", "state=SLEEPY", "status=DONE", "created_after=yesterday"],
)
def test_bad_list_filters_are_422(served: Served, query: str) -> None:
    client = served.client
    _problem(client.get(f"/v1/runs?{query}"), 422)


def test_beyond_the_cap_a_run_is_refused_with_retry_after_and_nothing_half_started(
    sqlite_settings: Settings,
) -> None:
    settings = sqlite_settings.model_copy(update={"model": HANGS, "max_concurrent_runs": 1})
    with served_client(settings, sample=False) as served:
        client, store = served.client, served.store
        first = client.post("/v1/runs", json={"query": QUESTION}).json()["run_id"]
        for path in ("/v1/runs", "/v1/chat"):
            refused = client.post(path, json={"query": QUESTION})
            assert "concurrent runs" in _problem(refused, 429)
            assert int(refused.headers["retry-after"]) >= 1
        assert _runs_started(store) == 1  # no RUN_STARTED for the refused ones

        ended = threading.Event()

        def watch() -> None:
            with client.stream("GET", f"/v1/runs/{first}/stream") as response:
                list(events(response))
            ended.set()

        watcher = threading.Thread(target=watch)
        watcher.start()
        client.post(f"/v1/runs/{first}/cancel")
        watcher.join(60)
        assert ended.is_set()
        again = client.post("/v1/runs", json={"query": "hello"})  # the slot is free again
        assert again.status_code == 202, again.text


def test_one_key_may_take_half_a_workers_runs_and_no_more(sqlite_settings: Settings) -> None:
    """With two keys that start runs, neither can hold every slot and starve the other."""
    keys = {name: f"{name}-user-key-4c1d7e9a0b2f8e63" for name in ("ann", "bob")}
    settings = sqlite_settings.model_copy(
        update={
            "model": HANGS,
            "max_concurrent_runs": 4,
            "api_keys": [ApiKey(key=SecretStr(k), name=n, role="user") for n, k in keys.items()],
        }
    )
    with served_client(settings, sample=False) as served:
        client, store = served.client, served.store

        def start(name: str) -> httpx.Response:
            headers = {"Authorization": f"Bearer {keys[name]}"}
            return client.post("/v1/runs", json={"query": QUESTION}, headers=headers)

        started = [start("ann").json()["run_id"] for _ in range(2)]
        refused = start("ann")
        assert _problem(refused, 429).startswith("ann already runs 2 of this worker's runs")
        assert int(refused.headers["retry-after"]) >= 1
        assert _runs_started(store) == 2  # the refused one started nothing
        other = start("bob")  # two slots are still free, and bob takes one
        assert other.status_code == 202, other.text
        for run_id in [*started, other.json()["run_id"]]:
            owner = "bob" if run_id == other.json()["run_id"] else "ann"
            headers = {"Authorization": f"Bearer {keys[owner]}"}
            assert client.post(f"/v1/runs/{run_id}/cancel", headers=headers).status_code == 200


def _runs_started(store: HarnessStore) -> int:
    log = store.recorder.select_notifications(start=1, limit=100_000)
    return sum(n.topic.endswith("Run.RunStarted") for n in log)


def test_the_openapi_document_describes_every_route(
    served: Served,
) -> None:
    client = served.client
    document = client.get("/openapi.json").json()
    assert document["info"]["version"] == harness_version() != "0+unknown"
    ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids)) >= 22  # one name per operation, each its own
    for name in ids:  # a verb and its object, not FastAPI's default (list_all_v1_runs_get)
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", name) and not name.endswith(("_get", "_post"))
    assert {"list_runs", "stream_run", "cancel_run", "chat", "get_run_trace"} <= set(ids)
    for operations in document["paths"].values():  # every error is a problem (RFC 9457)
        for operation in operations.values():
            for code, response in operation["responses"].items():
                if code[0] in "45":
                    assert list(response["content"]) == ["application/problem+json"], code
    problem = document["components"]["schemas"]["ProblemPublic"]
    assert {"type", "title", "status", "detail"} <= set(problem["properties"])
    invalid = document["components"]["schemas"]["HTTPValidationError"]
    assert {"title", "status", "detail"} <= set(invalid["required"])
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert operation.get("summary"), (method, path)
            assert operation.get("description"), (method, path)
            assert "200" in operation["responses"] or "202" in operation["responses"], path


def test_the_documented_projection_names_are_the_projections() -> None:
    assert get_args(ProjectionName) == tuple(p.name for p in all_projections())


def test_an_unavailable_database_is_a_503_with_retry_after_and_keys_stay_out_of_logs(
    pg_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    key = "never-log-this-key-0123456789"
    settings = pg_settings.model_copy(
        update={"api_keys": [ApiKey(key=SecretStr(key), name="ann", role="user")]}
    )
    auth = {"Authorization": f"Bearer {key}"}
    with served_client(settings, headers=auth) as served:
        client = served.client
        assert client.get("/v1/runs").status_code == 200
        with psycopg.connect(PG_URL, autocommit=True) as admin:  # the tables vanish
            admin.execute(
                sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(settings.database_schema))
            )
        for method, path in (("GET", "/v1/runs"), ("POST", "/v1/runs"), ("GET", "/readyz")):
            answer = client.request(method, path, json={"query": "hello"})
            detail = _problem(answer, 503)
            assert "Retry-After" in answer.headers, path
            assert "Traceback" not in detail and key not in answer.text
            for internal in ("SELECT", "LINE 1", "harness_events", settings.database_schema):
                assert internal not in detail, f"{path} (no key needed for /readyz): {detail}"
    assert key not in caplog.text
