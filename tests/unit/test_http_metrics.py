"""HttpMetrics: labels stay bounded whatever a client sends, and nothing is noted before start."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio

from api.http_metrics import HttpMetrics


class Noted:
    """Stands in for ``LocalMetrics``: what ``http`` was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def http(self, method: str, route: str, status: int, seconds: float) -> None:
        assert seconds >= 0
        self.calls.append((method, route, status))


def _serve(method: str, route: Any, *, started: bool = True) -> Noted:
    noted = Noted()
    app = SimpleNamespace(state=SimpleNamespace(worker=SimpleNamespace(local_metrics=noted)))

    async def inner(scope: Any, _receive: Any, send: Any) -> None:
        scope["route"] = route  # as the router sets it once it matched
        if started:
            await send({"type": "http.response.start", "status": 418, "headers": []})
            await send({"type": "http.response.start", "status": 500, "headers": []})  # noted once

    async def receive() -> Any:
        return {"type": "http.request"}

    async def send(_message: Any) -> None:
        return None

    scope = {"type": "http", "method": method, "app": app}
    anyio.run(HttpMetrics(inner), scope, receive, send)
    return noted


def test_a_route_is_its_template_and_a_method_http_lacks_is_other() -> None:
    assert _serve("GET", SimpleNamespace(path="/v1/runs/{run_id}")).calls == [
        ("GET", "/v1/runs/{run_id}", 418)
    ]
    assert _serve("BREW", None).calls == [("other", "other", 418)]


def test_a_request_that_never_answered_is_not_noted() -> None:
    assert _serve("GET", None, started=False).calls == []
