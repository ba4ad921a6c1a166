"""Every HTTP request counted and timed by route, for ``GET /metrics`` (``LocalMetrics``).

The route is the matched route's template (``/v1/runs/{run_id}``), never the raw path, and
``other`` for a path no route has (and for a method HTTP does not define): the labels stay as
few as the routes, whatever clients send.
The time is from the request's arrival to its response's start (an event stream's headers),
so a stream that stays open for minutes does not drown the answers' latency.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

OTHER = "other"
"""The route label of a request no route matched, and the method label of an unknown method."""
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""Methods counted by name: any other a client invents is ``other`` (no label per invention)."""


class HttpMetrics:
    """ASGI middleware counting each HTTP request by method, route and status, and timing it."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app`` (whose ``state.worker.local_metrics`` holds the metrics, once started)."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; note its status and time when the response starts."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        noted = False

        async def noting(message: Message) -> None:
            nonlocal noted
            if message["type"] == "http.response.start" and not noted:
                noted = True
                _note(scope, message["status"], time.perf_counter() - began)
            await send(message)

        await self.app(scope, receive, noting)


def _note(scope: Scope, status: int, seconds: float) -> None:
    worker: Any = getattr(getattr(scope.get("app"), "state", None), "worker", None)
    metrics = getattr(worker, "local_metrics", None)
    if metrics is None:  # not started yet, or stopped
        return
    route = getattr(scope.get("route"), "path", None) or OTHER
    method = scope["method"] if scope["method"] in METHODS else OTHER
    metrics.http(method, route, status, seconds)
