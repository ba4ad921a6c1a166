"""Bad values in every parameter and header that reaches SQL, on both stores: 4xx, never an outage.

PostgreSQL text cannot hold NUL, and a time may not exist in UTC; such values are the client's
mistake. They are refused at the door with a 422 naming the parameter, on SQLite and PostgreSQL
alike, and never answered or logged as "the database is unavailable" (503, Retry-After).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
from eventsourcing.persistence import DataError as StoredDataError
from sqlalchemy.exc import DataError

from api.main import create_app
from bootstrap.composition import bootstrap
from infrastructure.settings import Settings
from tests.api._serve import TIMEOUT, Served, read_all, serving_app

UNKNOWN = "00000000-0000-4000-8000-000000000000"
GOOD_PATH = {"run_id": UNKNOWN, "session_id": "some-session"}
"""A well-formed value for each path parameter, while another parameter is the bad one."""
BAD = ("\x00", "ab\x00cd")
OUTAGE = "database is unavailable"


def _parameters(document: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Every (method, path, where, name) the OpenAPI document declares."""
    return [
        (method.upper(), path, parameter["in"], parameter["name"])
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for parameter in operation.get("parameters", [])
    ]


def _url(path: str, where: str, name: str, value: str) -> str:
    path_values = {**GOOD_PATH, **({name: value} if where == "path" else {})}
    url = path.format(**{k: quote(v, safe="") for k, v in path_values.items()})
    return f"{url}?{quote(name)}={quote(value, safe='')}" if where == "query" else url


def _raw(base: str, method: str, target: str, header: bytes) -> int:
    """Send a request with a header httpx would refuse to send; the answer's status."""
    address = urlsplit(base)
    with socket.create_connection((address.hostname, address.port), timeout=30) as conn:
        conn.sendall(
            f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".encode()
            + header
            + b"\r\n\r\n"
        )
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def test_a_nul_in_any_parameter_or_header_is_a_client_error_on_both_stores(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    client, store = served.client, served.store
    head = store.head()
    parameters = _parameters(client.get("/openapi.json").json())
    assert ("GET", "/v1/runs", "query", "session_id") in parameters
    assert ("GET", "/v1/runs/{run_id}/stream", "header", "last-event-id") in parameters
    for method, path, where, name in parameters:
        for value in BAD:
            context = f"{method} {path} with {where} {name}={value!r}"
            if where == "header":
                target = _url(path, where, name, value)
                status = _raw(str(client.base_url), method, target, f"{name}: ".encode() + b"1\x00")
                assert 400 <= status < 500, f"{context}: {status}"
                continue
            answer = client.request(method, _url(path, where, name, value))
            assert answer.status_code == 422, f"{context}: {answer.status_code} {answer.text}"
            assert [where, name] in [e["loc"][:2] for e in answer.json()["detail"]], context
    assert store.head() == head
    assert OUTAGE not in caplog.text


@pytest.mark.parametrize("path", ["/v1/runs", "/v1/chat"])
@pytest.mark.parametrize(("field", "value"), [("query", "hi\x00"), ("session_id", "s\x00")])
def test_a_nul_in_a_body_field_is_a_422_on_both_stores(
    served: Served, path: str, field: str, value: str
) -> None:
    client, store = served.client, served.store
    head = store.head()
    answer = client.post(path, json={"query": "hello", field: value})
    assert answer.status_code == 422, answer.text
    assert ["body", field] in [e["loc"] for e in answer.json()["detail"]]
    assert store.head() == head


@pytest.mark.parametrize("name", ["created_after", "created_before"])
@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_beyond_what_utc_can_hold_is_a_422_naming_it(
    served: Served, name: str, value: str
) -> None:
    client = served.client
    answer = client.get("/v1/runs", params={name: value})
    assert answer.status_code == 422, answer.text
    [error] = answer.json()["detail"]
    assert (error["loc"], error["input"]) == (["query", name], value)
    assert "UTC" in error["msg"]


def test_a_well_formed_session_filter_still_lists(
    served: Served,
) -> None:
    client = served.client
    run = client.post("/v1/runs", json={"query": "hello", "session_id": "mine-1"})
    assert run.status_code == 202, run.text
    read_all(client, "GET", run.json()["stream"])  # ended: the listing shows it
    found = client.get("/v1/runs", params={"session_id": "mine-1"}).json()
    assert [r["run_id"] for r in found["data"]] == [run.json()["run_id"]]


def _refused_by_sqlalchemy() -> Exception:
    return DataError("SELECT 1", {}, ValueError("text fields cannot contain NUL"))


def _refused_by_the_recorder() -> Exception:
    return StoredDataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")


@pytest.mark.parametrize("error", [_refused_by_sqlalchemy, _refused_by_the_recorder])
def test_a_value_the_database_refuses_is_never_answered_or_logged_as_an_outage(
    sqlite_settings: Settings, caplog: pytest.LogCaptureFixture, error: Callable[[], Exception]
) -> None:
    # Nothing a client sends gets this far (the tests above); if something ever does, it is
    # our bug to fix, not an outage to retry: a 500, logged as unexpected, no Retry-After.
    with bootstrap(sqlite_settings, create=True) as services:
        app = create_app(sqlite_settings, services.store)

        @app.get("/refused")
        def refused() -> None:
            raise error()

        with serving_app(app) as base:
            answer = httpx.get(f"{base}/refused", timeout=TIMEOUT)
    assert answer.status_code == 500, answer.text
    assert "retry-after" not in answer.headers
    assert OUTAGE not in caplog.text and "unexpected error in GET /refused" in caplog.text
