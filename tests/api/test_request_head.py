"""A request's head is bounded as it arrives: HARNESS_MAX_HEADER_BYTES and HARNESS_MAX_HEADERS.

A 20 MB header on ``GET /healthz`` was answered 200, and four 100 MB ones took a worker from
112 MB to 523 MB: uvicorn's parser keeps a header until it ends. Real uvicorn with each of its
parsers (httptools, h11), raw sockets: nothing is simulated.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

from infrastructure.settings import Settings
from tests.api._serve import GUARDED, TIMEOUT, Served, served_client

LIMIT, FIELDS = 4096, 20
"""The test service's bounds: small, so that a head just under or over them is cheap to send."""
MB = 1 << 20


@pytest.fixture(params=list(GUARDED.values()), ids=list(GUARDED))
def bounded(sqlite_settings: Settings, request: pytest.FixtureRequest) -> Iterator[Served]:
    """The service with small head bounds, on each of uvicorn's parsers."""
    settings = sqlite_settings.model_copy(update={"max_header_bytes": LIMIT, "max_headers": FIELDS})
    with served_client(settings, http=request.param) as served:
        yield served


@contextmanager
def raw(served: Served) -> Iterator[socket.socket]:
    """A plain TCP connection to the service."""
    where = urlsplit(str(served.client.base_url))
    with socket.create_connection((where.hostname or "", where.port or 80), TIMEOUT.read) as sock:
        yield sock


def exchange(served: Served, request: bytes) -> tuple[str, dict[str, str], bytes]:
    """Send ``request`` whole on a new connection; the answer's status line, headers and body.

    The server closes the connection after the answer (``Connection: close``, or a refusal).
    """
    with raw(served) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *fields = head.decode().split("\r\n")
    return status, dict(f.lower().split(": ", 1) for f in fields), body


def get(size: int, *fields: str, target: str = "/healthz") -> bytes:
    """A GET request whose head is exactly ``size`` bytes (an ``X-Pad`` field fills it)."""
    lines = [f"GET {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", *fields]
    start = ("\r\n".join(lines) + "\r\nX-Pad: ").encode()
    pad = size - len(start) - 4
    assert pad >= 0, size
    return start + b"p" * pad + b"\r\n\r\n"


def check_refused(answer: tuple[str, dict[str, str], bytes], *named: str) -> None:
    """A well-formed 431 that closes the connection and names the bound."""
    status, headers, body = answer
    assert status == "HTTP/1.1 431 Request Header Fields Too Large", answer
    assert headers["connection"] == "close"
    assert headers["content-type"] == "application/problem+json"
    assert int(headers["content-length"]) == len(body)
    problem = json.loads(body)
    assert (problem["status"], problem["title"]) == (431, "Request Header Fields Too Large")
    for word in named:
        assert word in problem["detail"], body


@pytest.mark.parametrize(
    ("size", "query"), [(MB, 0), (2 * MB, MB), (20 * MB, 0)], ids=["1MB", "1MB-URL", "20MB"]
)
def test_a_head_over_the_byte_limit_is_answered_431_naming_it(
    bounded: Served, size: int, query: int
) -> None:
    request = get(size, target="/healthz?" + "q" * query)
    check_refused(exchange(bounded, request), "HARNESS_MAX_HEADER_BYTES", str(LIMIT))
    assert bounded.client.get("/healthz").status_code == 200  # a new connection is served


def test_a_head_of_exactly_the_limit_is_served_and_one_byte_more_is_not(bounded: Served) -> None:
    status, _, body = exchange(bounded, get(LIMIT))
    assert status == "HTTP/1.1 200 OK", body
    check_refused(exchange(bounded, get(LIMIT + 1)), "HARNESS_MAX_HEADER_BYTES")


def test_more_header_fields_than_the_limit_is_answered_431_naming_it(bounded: Served) -> None:
    """Host, Connection and X-Pad are three; the rest are small, well within the bytes."""
    just = [f"X-{n}: {n}" for n in range(FIELDS - 3)]
    status, _, body = exchange(bounded, get(1024, *just))
    assert status == "HTTP/1.1 200 OK", body
    over = exchange(bounded, get(1024, *just, "X-One-More: 1"))
    check_refused(over, "HARNESS_MAX_HEADERS", str(FIELDS))
    assert bounded.client.get("/healthz").status_code == 200


def test_heads_are_counted_per_request_on_a_kept_alive_connection(bounded: Served) -> None:
    """Three heads of 60% of the limit each on one connection: each is within it, so all pass."""
    with raw(bounded) as sock:
        for _ in range(3):
            sock.sendall(get(LIMIT * 6 // 10).replace(b"Connection: close", b"X-Keep: alive"))
            answer = sock.recv(65536)  # the whole small answer comes in one segment on loopback
            assert answer.startswith(b"HTTP/1.1 200 "), answer


def test_pipelined_requests_are_each_counted_and_a_huge_one_cut_without_garbling_an_answer(
    bounded: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """Ten small requests, then a 1 MB head, all in one send (HTTP pipelining).

    The small ones are served whole and in order; the huge one is cut at the limit, and its 431
    waits until they are (nothing may go between an answer's bytes: uvloop raised on them).
    """
    small = get(LIMIT * 6 // 10).replace(b"Connection: close", b"X-Keep: alive")
    with raw(bounded) as sock:
        sock.sendall(small * 10 + get(MB))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)
    assert statuses == [b"200"] * 10 + [b"431"], (statuses, answer[-300:])
    assert answer.count(b'{"status":"ok"}') == 10  # each answer whole, in order
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")], caplog.text
    assert bounded.client.get("/healthz").status_code == 200


def test_a_body_in_the_same_read_as_its_head_is_not_counted_as_head(bounded: Served) -> None:
    """A body three times the head limit, sent with its head at once: a body, bounded apart."""
    body = b'{"query": "Why was checkout slow on 2026-11-29?"' + b" " * (3 * LIMIT) + b"}"
    head = (
        "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    status, _, answer = exchange(bounded, head.encode() + body)
    assert status == "HTTP/1.1 202 Accepted", answer


def test_the_default_bounds_are_32_kib_and_100_fields(sqlite_settings: Settings) -> None:
    with served_client(sqlite_settings) as served:
        assert exchange(served, get(32 * 1024))[0] == "HTTP/1.1 200 OK"
        check_refused(exchange(served, get(MB)), "32768 bytes (HARNESS_MAX_HEADER_BYTES)")
        many = [f"X-{n}: {n}" for n in range(98)]  # with Host, Connection and X-Pad: 101
        check_refused(exchange(served, get(4096, *many)), "100 header fields")
