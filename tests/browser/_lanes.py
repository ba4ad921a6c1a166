"""The lanes a run's timeline must show, derived from its trace events independently of the page.

One lane per phase, in the order of its first event in the log: routing; each model call
(``model call N · PURPOSE``, its outcome); each tool invocation (``tool NAME``: READY,
NO_EVIDENCE or FAILED) and each rejected tool request (REJECTED); collection (its stop reason);
evidence guard (VALID/INVALID, the last check); repair; semantic guard (its verdict); release (the
outcome, and the fallback type); termination (state · reason).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

COLLECTION = {
    "COLLECTION_STARTED",
    "TOOL_PROGRESS",
    "PROGRESS_PROTOCOL_VIOLATION",
    "COLLECTION_STOP",
    "STOP_REQUIRED_DELIVERED",
}

Lanes = dict[str, list[Any]]
"""key -> [label, state, start (seconds since the epoch)]"""


def expected_lanes(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """``(key, label, state)`` of every lane, from the trace events in log order."""
    return [(key, label, state) for key, (label, state, _) in _lanes(events).items()]


def lane_starts(events: list[dict[str, Any]]) -> dict[str, float]:
    """When each lane begins (epoch seconds; a model call: its end less its latency)."""
    return {key: start for key, (_, _, start) in _lanes(events).items()}


def _lanes(events: list[dict[str, Any]]) -> Lanes:
    lanes: Lanes = {}
    for event in events:
        at = datetime.fromisoformat(event["timestamp"]).timestamp()
        rule = _rule(event["event_type"])
        if rule is not None:
            rule(lanes, event, event["attributes"], at)
    return lanes


def _lane(lanes: Lanes, key: str, label: str, state: str, at: float) -> list[Any]:
    return lanes.setdefault(key, [label, state, at])


def _routing(lanes: Lanes, event: dict[str, Any], a: dict[str, Any], at: float) -> None:
    found = _lane(lanes, "routing", "routing", "RUNNING", at)
    if event["event_type"] == "ROUTING_DECISION":
        found[1] = a["intent"] or "FAILED"


def _model(lanes: Lanes, event: dict[str, Any], a: dict[str, Any], at: float) -> None:
    number = sum(key.startswith("model-") for key in lanes) + 1
    label = f"model call {number} · {a['purpose']}"
    _lane(lanes, f"model-{number}", label, a["outcome"], at - a["latency_ms"] / 1000)


def _tool(lanes: Lanes, event: dict[str, Any], a: dict[str, Any], at: float) -> None:
    key, kind = f"tool-{event['stream_id']}", event["event_type"]
    if kind == "TOOL_INVOCATION_STARTED":
        _lane(lanes, key, f"tool {a['tool']}", "STARTED", at)
    elif kind == "TOOL_INVOCATION_FAILED":
        lanes[key][1] = "FAILED"
    else:
        lanes[key][1] = "NO_EVIDENCE" if a["evidence_status"] == "NO_EVIDENCE" else "READY"


def _rejected(lanes: Lanes, event: dict[str, Any], a: dict[str, Any], at: float) -> None:
    _lane(lanes, f"rejected-{event['position']}", f"tool {a['tool']}", "REJECTED", at)


def _collection(lanes: Lanes, event: dict[str, Any], a: dict[str, Any], at: float) -> None:
    found = _lane(lanes, "collection", "collection", "COLLECTING", at)
    if event["event_type"] == "COLLECTION_STOP":
        found[1] = a["stop_reason"]


def _evidence(lanes: Lanes, event: dict[str, Any], a: dict[str, Any], at: float) -> None:
    _lane(lanes, "evidence-guard", "evidence guard", "", at)[1] = (
        "VALID" if a["valid"] else "INVALID"
    )


def _semantic(lanes: Lanes, event: dict[str, Any], a: dict[str, Any], at: float) -> None:
    found = _lane(lanes, "semantic-guard", "semantic guard", "RUNNING", at)
    if event["event_type"] == "SEMANTIC_GUARD_DECISION":
        found[1] = a["verdict"] or "UNAVAILABLE"


def _fixed(key: str, state: Callable[[dict[str, Any]], str]) -> Any:
    def rule(lanes: Lanes, event: dict[str, Any], a: dict[str, Any], at: float) -> None:
        _lane(lanes, key, key, state(a), at)

    return rule


RULES = {
    "ROUTING_ATTEMPT": _routing,
    "ROUTING_DECISION": _routing,
    "AGENT_MODEL_STEP": _model,
    "TOOL_INVOCATION_STARTED": _tool,
    "TOOL_INVOCATION_READY": _tool,
    "TOOL_INVOCATION_FAILED": _tool,
    "TOOL_REQUEST_REJECTED": _rejected,
    "EVIDENCE_GUARD_INITIAL": _evidence,
    "EVIDENCE_GUARD_RECHECK": _evidence,
    "EVIDENCE_REPAIR": _fixed("repair", lambda a: "REPAIRED"),
    "SEMANTIC_GUARD_ATTEMPT": _semantic,
    "SEMANTIC_GUARD_DECISION": _semantic,
    "RELEASE_DECISION": _fixed(
        "release",
        lambda a: f"{a['outcome']} · {a['fallback_type']}" if a["fallback_type"] else a["outcome"],
    ),
    "RUN_TERMINATED": _fixed("termination", lambda a: f"{a['state']} · {a['reason']}"),
}


def _rule(kind: str) -> Any:
    return _collection if kind in COLLECTION else RULES.get(kind)
