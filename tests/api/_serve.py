"""A real uvicorn server in a thread, a client of it, and a reader of Server-Sent Events."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from api.http_protocol import PROTOCOL
from api.main import create_app
from application.store import HarnessStore
from bootstrap.composition import bootstrap
from infrastructure.settings import Settings

STARTUP_TIMEOUT = 30.0
GUARDED = {"httptools": "api.http_protocol:HttpToolsGuarded", "h11": "api.http_protocol:H11Guarded"}
"""Our protocol on each of uvicorn's parsers (``harness serve`` uses httptools')."""
TIMEOUT = httpx.Timeout(60.0)
"""How long a test's client waits for an answer (a run's whole stream included)."""


@dataclass(frozen=True)
class Served:
    """A served app, a client of it, and the store the test shares with the app."""

    client: httpx.Client
    store: HarnessStore
    app: FastAPI


@contextmanager
def served_client(
    settings: Settings,
    *,
    sample: bool = True,
    headers: Mapping[str, str] | None = None,
    http: str = PROTOCOL,
) -> Iterator[Served]:
    """The app over real uvicorn on ``settings``' store, and a client of it.

    The composition root makes the store as ``harness db init`` does (with ``--sample`` unless
    ``sample`` is false) and hands it to the app: the test reads what the app wrote. ``http``
    is uvicorn's protocol class (``harness serve``'s by default).
    """
    with bootstrap(settings, create=True, sample=sample) as services:
        app = create_app(settings, services.store)
        with (
            serving_app(app, http=http) as base,
            httpx.Client(base_url=base, timeout=TIMEOUT, headers=headers) as client,
        ):
            yield Served(client, services.store, app)


@contextmanager
def serving(settings: Settings, store: HarnessStore | None = None) -> Iterator[str]:
    """Serve the app on a free loopback port; yields its base URL."""
    with serving_app(create_app(settings, store)) as url:
        yield url


@contextmanager
def serving_app(
    app: FastAPI, *, uds: Path | None = None, log_level: str = "warning", http: str = PROTOCOL
) -> Iterator[str]:
    """Serve an app already built on a free loopback port, or on the Unix socket ``uds``.

    Yields its base URL (on a socket, a client needs ``httpx.HTTPTransport(uds=...)`` too).
    """
    where: dict[str, Any] = {"uds": str(uds)} if uds else {"host": "127.0.0.1", "port": 0}
    config = uvicorn.Config(app, log_level=log_level, http=http, **where)  # as harness serve
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:  # start-up, not an assertion: uvicorn has no readiness callback
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        if uds:
            yield "http://harness"
        else:
            yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@dataclass(frozen=True)
class Event:
    """One server-sent event."""

    id: int | None
    event: str
    data: dict[str, Any]


def events(response: httpx.Response) -> Iterator[Event]:
    """Parse a ``text/event-stream`` body as it arrives (comments are skipped)."""
    fields: dict[str, str] = {}
    for line in _lines(response):
        if line == "":
            if fields:
                yield Event(
                    int(fields["id"]) if "id" in fields else None,
                    fields.get("event", "message"),
                    json.loads(fields.get("data", "null")),
                )
            fields = {}
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


def _lines(response: httpx.Response) -> Iterator[str]:
    """The body's lines as the WHATWG rules split them: at CR, LF or CRLF only.

    Not ``iter_lines``: like ``str.splitlines`` it also splits at U+0085, U+2028 and U+2029,
    which JSON leaves unescaped in an event's data (a query may hold them).
    """
    buffer = ""
    for text in response.iter_text():
        buffer += text
        while (end := _EOL.search(buffer)) is not None:
            if end[0] == "\r" and end.end() == len(buffer):
                break  # perhaps the first half of a CRLF: wait for what follows
            yield buffer[: end.start()]
            buffer = buffer[end.end() :]
    if buffer:
        yield buffer.removesuffix("\r")


_EOL = re.compile(r"\r\n|\r|\n")


def read_all(client: httpx.Client, method: str, url: str, **kw: Any) -> list[Event]:
    """Open a stream and read it to its end."""
    with client.stream(method, url, **kw) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(events(response))


def db_init_sample(settings: Settings) -> None:
    """What `harness db init --sample` does: event and read tables, the sample data."""
    bootstrap(settings, create=True, sample=True).close()


def free_port() -> int:
    """A loopback port nothing listens on (for a server process a test starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_up(
    base: str, process: subprocess.Popen[str], path: str = "/readyz", timeout: float = 60
) -> None:
    """Wait until a server process answers ``path`` with 200; fail if it exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # start-up of another process: nothing to wait on but it
        if process.poll() is not None:
            raise AssertionError(f"{base} exited {process.returncode}: {process.communicate()}")
        try:
            if httpx.get(f"{base}{path}", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{base} did not come up within {timeout:g}s")
