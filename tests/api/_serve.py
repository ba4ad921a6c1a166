"""A real uvicorn server in a thread, and a client that reads Server-Sent Events."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn

from api.main import create_app
from application.store import HarnessStore
from infrastructure.settings import Settings

STARTUP_TIMEOUT = 30.0


@contextmanager
def serving(settings: Settings, store: HarnessStore | None = None) -> Iterator[str]:
    """Serve the app on a free loopback port; yields its base URL."""
    config = uvicorn.Config(
        create_app(settings, store), host="127.0.0.1", port=0, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:  # start-up, not an assertion: uvicorn has no readiness callback
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
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
    for line in response.iter_lines():
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


def read_all(client: httpx.Client, method: str, url: str, **kw: Any) -> list[Event]:
    """Open a stream and read it to its end."""
    with client.stream(method, url, **kw) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(events(response))
