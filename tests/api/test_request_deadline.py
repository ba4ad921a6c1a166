"""A request must arrive whole within HARNESS_REQUEST_READ_TIMEOUT; its answer may take longer.

An attacker on 127.0.0.1 who opens connections and sends nothing, or a request's headers or body
a byte at a time, held each connection (a file descriptor) for as long as they liked: uvicorn
times out only idle keep-alive connections. Real uvicorn, raw sockets: nothing is simulated.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

from infrastructure.settings import Settings
from tests.api._serve import GUARDED, TIMEOUT, Served, events, served_client
from tests.api.test_streams import HANGS, QUESTION

DEADLINE = 0.5
"""Seconds: short, so the server's clock runs out during the test; every wait is for an event."""
GUARD = TIMEOUT.read
"""How long a socket read waits before the test fails (the server must act well before)."""


@pytest.fixture(params=list(GUARDED.values()), ids=list(GUARDED))
def hurried(sqlite_settings: Settings, request: pytest.FixtureRequest) -> Iterator[Served]:
    """The service with a short deadline and a model that hangs, on each of uvicorn's parsers."""
    settings = sqlite_settings.model_copy(update={"model": HANGS, "request_read_timeout": DEADLINE})
    with served_client(settings, http=request.param) as served:
        yield served


@contextmanager
def raw(served: Served) -> Iterator[socket.socket]:
    """A plain TCP connection to the service."""
    where = urlsplit(str(served.client.base_url))
    with socket.create_connection((where.hostname or "", where.port or 80), GUARD) as sock:
        yield sock


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


@pytest.mark.parametrize(
    "sent",
    [b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain", b"GE"],
    ids=["headers-unfinished", "request-line-unfinished"],
)
def test_a_request_that_does_not_arrive_is_answered_408_and_closed(
    hurried: Served, sent: bytes
) -> None:
    with raw(hurried) as sock:
        sock.sendall(sent)
        answer = until_closed(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *fields = head.decode().split("\r\n")
    headers = dict(field.lower().split(": ", 1) for field in fields)
    assert status == "HTTP/1.1 408 Request Timeout", answer
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body) and body, answer  # a well-formed answer
    assert headers["content-type"] == "application/problem+json"
    assert json.loads(body)["detail"] == "the request did not arrive whole in time"
    assert hurried.client.get("/healthz").status_code == 200  # the service goes on serving


def test_a_connection_that_sends_nothing_is_closed_without_an_answer(hurried: Served) -> None:
    """As an idle one: a browser's unused preconnection must not read a 408 as its answer."""
    with raw(hurried) as sock:
        assert until_closed(sock) == b""
    assert hurried.client.get("/healthz").status_code == 200


def test_a_body_that_does_not_arrive_closes_the_connection_and_starts_nothing(
    hurried: Served,
) -> None:
    head = (
        "POST /v1/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 200\r\n\r\n"
    )
    with raw(hurried) as sock:
        sock.sendall(head.encode() + b'{"query": "Why was ch')
        answer = until_closed(sock)
    assert b" 200 " not in answer.split(b"\r\n", 1)[0], answer
    assert hurried.client.get("/v1/runs").json()["count"] == 0, "a half-sent chat started a run"
    assert hurried.client.get("/healthz").status_code == 200


def test_a_second_request_on_a_kept_alive_connection_is_timed_too(hurried: Served) -> None:
    with raw(hurried) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = sock.recv(4096)  # the whole small answer comes in one segment on loopback
        assert first.startswith(b"HTTP/1.1 200 "), first
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never finished
        answer = until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer


def test_an_answer_that_takes_longer_than_the_deadline_is_not_cut(hurried: Served) -> None:
    """The deadline covers the request only: an event stream lasts as long as its run."""
    client = hurried.client
    with client.stream("POST", "/v1/chat", json={"query": QUESTION}) as response:
        feed = events(response)
        first = next(feed)
        assert first.event == "metadata"
        with raw(hurried) as idle:  # its closing shows the deadline has passed meanwhile
            assert until_closed(idle) == b""
        run_id = first.data["run_id"]
        assert client.post(f"/v1/runs/{run_id}/cancel").json()["cancelled"] is True
        rest = list(feed)
    assert rest and rest[-1].event == "failure", [e.event for e in rest]
    assert rest[-1].data["release_outcome"] == "CANCELLED"


def test_a_websocket_upgrade_is_not_cut_by_the_clock_of_the_request_it_came_from(
    hurried: Served,
) -> None:
    """The service has no WebSocket route: the upgrade is refused at once, never timed out."""
    handshake = (
        b"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    with raw(hurried) as sock:
        sock.sendall(handshake)
        answer = until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 403 "), answer
