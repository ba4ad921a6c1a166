"""The WHATWG event-stream format of a run's feed: its frames and comments.

Every feed entry is a frame with an ``id:`` (its number in the run's feed, so ``Last-Event-ID``
resumes exactly), an ``event:`` and one ``data:`` line of JSON. A quiet stream sends comments;
a stream that gave up waiting for the database ends with an ``unavailable`` event that has no
id and a ``retry:`` field. ``api.sse_schema`` describes the events in the OpenAPI document.
"""

from __future__ import annotations

from typing import Any

from api.errors import RETRY_AFTER
from application.view_port import encode_json

KEEPALIVE = ": keep-alive\n\n"
"""The comment a stream sends when no entry came for a keep-alive interval."""
RETRYING = ": the database is unavailable; retrying\n\n"
"""The comment a stream sends before it tries a failed read again."""

LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}
"""Escaped in a frame's JSON: the event-stream format ends lines only at CR and LF, but many
line-based clients (Python's ``splitlines``, httpx's ``iter_lines``) also break at these."""

FRAME = "_frame"
"""Where a row keeps its rendered frame."""


def frame(row: dict[str, Any]) -> str:
    """One entry in the WHATWG event-stream format (``id:`` is its number in the run's feed).

    A row the hub hands to many streams is rendered once (its streams share the row and the
    event loop's thread).
    """
    rendered: str | None = row.get(FRAME)
    if rendered is None:
        data = encode_json(row["data"]).translate(LINE_BREAKS)
        rendered = row[FRAME] = f"id: {row['seq']}\nevent: {row['event']}\ndata: {data}\n\n"
    return rendered


def unavailable(run_id: str, seconds: float) -> str:
    """The last event of a stream that gave up waiting for the database.

    It has no ``id``: it is not a feed entry, so ``Last-Event-ID`` still names the last entry
    the client got.
    """
    data = {
        "run_id": run_id,
        "detail": f"the database has been unavailable for {seconds:.0f}s; resume this stream"
        " with Last-Event-ID after Retry-After seconds",
        "retry_after": int(RETRY_AFTER),
    }
    return f"event: unavailable\nretry: {int(RETRY_AFTER) * 1000}\ndata: {encode_json(data)}\n\n"
