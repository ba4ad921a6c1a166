"""The event catalogue of SPEC §17 exists, named as the trace types, each class versioned."""

from __future__ import annotations

from domain.catalogue import EVENT_CLASSES, event_type_name

SPEC_CATALOGUE = {
    "RUN_STARTED",
    "ROUTING_ATTEMPT",
    "ROUTING_DECISION",
    "APPLICATION_STATUS_CHANGED",
    "AGENT_MODEL_STEP",
    "TOOL_REQUEST_REJECTED",
    "EVIDENCE_GUARD_INITIAL",
    "EVIDENCE_REPAIR",
    "EVIDENCE_GUARD_RECHECK",
    "SEMANTIC_GUARD_ATTEMPT",
    "SEMANTIC_GUARD_DECISION",
    "RELEASE_DECISION",
    "CANCELLATION_REQUESTED",
    "RUN_TERMINATED",
    "RUN_FINISHED",
    "TOOL_INVOCATION_STARTED",
    "TOOL_INVOCATION_READY",
    "TOOL_INVOCATION_FAILED",
    "COLLECTION_STARTED",
    "TOOL_PROGRESS",
    "PROGRESS_PROTOCOL_VIOLATION",
    "COLLECTION_STOP",
    "STOP_REQUIRED_DELIVERED",
}


def test_every_spec_event_type_has_a_class() -> None:
    names = {event_type_name(cls) for cls in EVENT_CLASSES}
    assert SPEC_CATALOGUE <= names
    assert names - SPEC_CATALOGUE == {
        "BUDGET_CHARGED",
        "BUDGET_EXHAUSTED",
        "DRAFT_PROPOSED",
        "PASSAGES_RETRIEVED",
        "ANSWER_PROPOSED",
    }


def test_every_event_class_has_a_class_version() -> None:
    versions = {cls.__qualname__: getattr(cls, "class_version", None) for cls in EVENT_CLASSES}
    assert all(isinstance(v, int) and v >= 1 for v in versions.values()), versions


def test_type_names_are_upper_snake_case_of_the_class_name() -> None:
    assert event_type_name(type("RunStarted", (), {})) == "RUN_STARTED"
    assert event_type_name(type("AgentModelStep", (), {})) == "AGENT_MODEL_STEP"
