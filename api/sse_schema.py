"""The OpenAPI description of a run's feed: one item schema per event type.

A ``text/event-stream`` response is a sequence of events, not one JSON document, so it is
described the OpenAPI 3.2 way: ``itemSchema`` (not ``schema``) gives the schema of one event,
here one alternative per ``event`` name, each with the JSON its ``data`` line carries
(``contentMediaType`` and ``contentSchema``); there is no ``schema`` (3.2 would read it as the
type of the whole sequence). A tool that knows only OpenAPI 3.1 ignores ``itemSchema`` and
hands the response over unparsed (``openapi-python-client`` gives the raw stream) instead of
parsing the stream as one JSON object, which it cannot be; schemathesis checks each event.
"""

from __future__ import annotations

from typing import Any

from domain.release import PUBLISHED
from domain.release_states import FallbackType, ReleaseOutcome
from domain.states import ChatApplicationStatus, RunState

IDENTITY = {
    "session_id": {"type": "string", "description": "The run's session."},
    "run_id": {"type": "string", "format": "uuid", "description": "The run."},
}
"""What every event's data carries."""


def _values(kinds: Any) -> list[str]:
    return sorted(str(kind.value) for kind in kinds)


OUTCOME = {"type": "string", "enum": _values(ReleaseOutcome)}


def _event(name: str, description: str, data: dict[str, Any], numbered: bool = True) -> Any:
    """The schema of one event: its ``id`` (unless not numbered), ``event`` and JSON ``data``."""
    fields = IDENTITY | data if numbered else data
    properties: dict[str, Any] = {
        "event": {"const": name},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "object", "properties": fields, "required": list(fields)},
        },
    }
    if numbered:
        properties["id"] = {
            "type": "string",
            "pattern": "^[0-9]+$",
            "description": "Its number in the run's feed (send it back as Last-Event-ID).",
        }
    else:
        properties["retry"] = {"type": "string", "pattern": "^[0-9]+$"}
    required = ["event", "data", "id" if numbered else "retry"]
    return {"title": name, "description": description, "type": "object",
            "properties": properties, "required": required}  # fmt: skip


SSE_EVENTS = [
    _event("metadata", "The first event: the question asked.", {"query": {"type": "string"}}),
    _event(
        "status",
        "A user-visible phase (SPEC §6), any number of times.",
        {"status": {"type": "string", "enum": _values(ChatApplicationStatus)}},
    ),
    _event(
        "content",
        "The published answer: a conclusion (SUCCESS) or a typed safe fallback (FALLBACK).",
        {
            "release_outcome": {"type": "string", "enum": _values(PUBLISHED)},
            "fallback_type": {"type": ["string", "null"], "enum": [*_values(FallbackType), None]},
            "content": {"type": "object", "description": "The published content (SPEC §9)."},
        },
    ),
    _event(
        "failure",
        "No answer: why the run ended (a cancelled run's last event).",
        {
            "release_outcome": OUTCOME,
            "termination_state": {"type": ["string", "null"], "enum": [*_values(RunState), None]},
            "termination_reason": {"type": ["string", "null"]},
        },
    ),
    _event("done", "The last event of a run that was not cancelled.", {"release_outcome": OUTCOME}),
    _event(
        "unavailable",
        "The stream gave up waiting for the database: resume with Last-Event-ID after `retry` ms.",
        {
            "run_id": IDENTITY["run_id"],
            "detail": {"type": "string"},
            "retry_after": {"type": "integer", "description": "Seconds."},
        },
        numbered=False,
    ),
]
"""One schema per event a run's feed sends, in the order a feed sends them."""

STREAM_DOC = {
    "content": {"text/event-stream": {"itemSchema": {"oneOf": SSE_EVENTS}}},
    "description": "The run's feed: metadata → status* → (content | failure) → done, each "
    "event with its id; keep-alive comments meanwhile. When the database has been away for "
    "four keep-alive intervals the stream ends with `unavailable` (no id, with `retry`): "
    "resume it with Last-Event-ID.",
}
"""The OpenAPI response of a route that streams a run's feed."""
