"""Given/when/then tests of the ToolInvocation aggregate: PROJECTING, then READY or ERROR."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from domain.errors import InvalidCommandError, InvocationClosedError
from domain.tool_invocation import ReadyEvidence, ToolInvocation
from domain.tool_states import EvidenceStatus, InvocationStatus, ToolErrorCode
from tests.unit.gwt import replay, then_events, then_refused

RUN_ID = UUID("00000000-0000-4000-8000-000000000001")
INVOCATION_ID = UUID("00000000-0000-4000-8000-0000000000a1")
ARGUMENTS: dict[str, Any] = {"service": "checkout", "window": "15m"}

Step = Callable[[ToolInvocation], object]


def given(*steps: Step) -> ToolInvocation:
    """An invocation rebuilt from the events of beginning it and then taking ``steps``."""
    invocation = ToolInvocation.begin(
        RUN_ID, "logs.search", "service=checkout", ARGUMENTS, invocation_id=INVOCATION_ID
    )
    for step in steps:
        step(invocation)
    return replay(ToolInvocation, invocation.collect_events())


def ready_with_evidence(invocation: ToolInvocation) -> None:
    invocation.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "ERROR timeout after 30s")


def failed(invocation: ToolInvocation) -> None:
    invocation.fail("EXECUTION", "backend returned 503")


def ready_payload(
    evidence: EvidenceStatus, content: str, notes: tuple[str, ...] = (), redactions: int = 0
) -> dict[str, Any]:
    data = content.encode("utf-8")
    return {
        "evidence_status": evidence,
        "content": content,
        "byte_size": len(data),
        "content_hash": hashlib.sha256(data).hexdigest(),
        "notes": notes,
        "redactions": redactions,
    }


# -- begin ---------------------------------------------------------------------------------------


def test_begin_records_the_canonical_start_in_projecting() -> None:
    invocation = ToolInvocation.begin(
        RUN_ID, "logs.search", "service=checkout", ARGUMENTS, invocation_id=INVOCATION_ID
    )

    assert then_events(invocation) == [
        (
            ToolInvocation.ToolInvocationStarted,
            {
                "run_id": RUN_ID,
                "tool": "logs.search",
                "normalized_scope": "service=checkout",
                "arguments": ARGUMENTS,
                "origin": "builtin",
                "read_only_override": False,
                "call_id": "",
                "mcp": None,
            },
        )
    ]
    assert invocation.id == INVOCATION_ID
    assert invocation.status is InvocationStatus.PROJECTING
    assert invocation.evidence_status is None
    assert not invocation.is_referenceable


def test_begin_keeps_its_own_copy_of_the_arguments() -> None:
    arguments: dict[str, Any] = {"service": "checkout"}
    invocation = ToolInvocation.begin(RUN_ID, "logs.search", "s", arguments)

    arguments["service"] = "payments"

    assert invocation.arguments == {"service": "checkout"}


def test_begin_without_an_id_gets_a_fresh_one() -> None:
    first = ToolInvocation.begin(RUN_ID, "logs.search", "s", {})
    second = ToolInvocation.begin(RUN_ID, "logs.search", "s", {})

    assert first.id != second.id


@pytest.mark.parametrize("tool", ["", "   "], ids=["empty", "blank"])
def test_begin_refuses_an_empty_tool_name(tool: str) -> None:
    with pytest.raises(InvalidCommandError) as caught:
        ToolInvocation.begin(RUN_ID, tool, "s", {}, invocation_id=INVOCATION_ID)

    assert caught.value.aggregate_id == INVOCATION_ID
    assert repr(INVOCATION_ID) in str(caught.value)


# -- PROJECTING → READY --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "content"),
    [
        (EvidenceStatus.EVIDENCE_FOUND, "ERROR timeout after 30s"),
        (EvidenceStatus.EVIDENCE_FOUND, "延迟 p99 = 850ms ✓"),
        (EvidenceStatus.NO_EVIDENCE, ""),
        (EvidenceStatus.NO_EVIDENCE, "no matching lines in service=checkout, last 15m"),
    ],
    ids=["found-ascii", "found-multibyte", "none-empty", "none-with-scope-note"],
)
def test_mark_ready_records_the_projected_evidence(evidence: ReadyEvidence, content: str) -> None:
    invocation = given()

    invocation.mark_ready(evidence, content)

    assert then_events(invocation) == [
        (ToolInvocation.ToolInvocationReady, ready_payload(evidence, content))
    ]
    assert invocation.status is InvocationStatus.READY
    assert invocation.evidence_status is evidence
    assert invocation.content == content
    assert invocation.is_referenceable


def test_notes_are_recorded_beside_the_content_and_not_hashed_with_it() -> None:
    invocation = given()
    notes = ("[3 more records beyond limit=2]", "[1 more records truncated]")

    invocation.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "ERROR timeout after 30s", notes)

    assert then_events(invocation) == [
        (
            ToolInvocation.ToolInvocationReady,
            ready_payload(EvidenceStatus.EVIDENCE_FOUND, "ERROR timeout after 30s", notes),
        )
    ]
    assert (invocation.content, invocation.notes) == ("ERROR timeout after 30s", notes)


def test_byte_size_counts_utf8_bytes_and_the_hash_is_sha256_hex() -> None:
    invocation = given()

    invocation.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "é")

    (event,) = invocation.collect_events()
    assert isinstance(event, ToolInvocation.ToolInvocationReady)
    assert event.byte_size == 2
    assert event.content_hash == (
        "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"
    )


def test_no_evidence_with_empty_content_hashes_the_empty_string() -> None:
    invocation = given()

    invocation.mark_ready(EvidenceStatus.NO_EVIDENCE, "")

    (event,) = invocation.collect_events()
    assert isinstance(event, ToolInvocation.ToolInvocationReady)
    assert event.byte_size == 0
    assert event.content_hash == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


def test_ready_with_evidence_status_error_is_refused() -> None:
    invocation = given()

    then_refused(
        invocation,
        InvalidCommandError,
        lambda i: i.mark_ready(EvidenceStatus.ERROR, "x"),  # type: ignore[arg-type]
    )
    assert invocation.status is InvocationStatus.PROJECTING


@pytest.mark.parametrize("content", ["", "  \n\t"], ids=["empty", "blank"])
def test_evidence_found_with_empty_content_is_refused(content: str) -> None:
    invocation = given()

    then_refused(
        invocation,
        InvalidCommandError,
        lambda i: i.mark_ready(EvidenceStatus.EVIDENCE_FOUND, content),
    )
    assert invocation.status is InvocationStatus.PROJECTING


# -- PROJECTING → ERROR --------------------------------------------------------------------------


def test_fail_records_the_error_and_closes_as_error() -> None:
    invocation = given()

    invocation.fail("PROJECTION_TOO_LARGE", "projection over 64 KiB", error_type="-32603")

    assert then_events(invocation) == [
        (
            ToolInvocation.ToolInvocationFailed,
            {
                "error_code": "PROJECTION_TOO_LARGE",
                "message": "projection over 64 KiB",
                "redactions": 0,
                "error_type": "-32603",
            },
        )
    ]
    assert invocation.status is InvocationStatus.ERROR
    assert invocation.evidence_status is EvidenceStatus.ERROR
    assert invocation.error_code == "PROJECTION_TOO_LARGE"
    assert not invocation.is_referenceable


@pytest.mark.parametrize("code", list(ToolErrorCode), ids=lambda c: c.value)
def test_fail_with_a_harness_code_records_its_text(code: ToolErrorCode) -> None:
    # stored as text, like a tool's own code, so logs from before the enum read the same
    invocation = given()

    invocation.fail(code, "it failed")

    assert then_events(invocation) == [
        (
            ToolInvocation.ToolInvocationFailed,
            {"error_code": code.value, "message": "it failed", "redactions": 0, "error_type": ""},
        )
    ]


def test_ready_and_failed_record_how_many_secrets_were_redacted_never_which() -> None:
    ready, failed = given(), given()

    ready.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "token=[redacted] refused", (), 2)
    failed.fail("EXECUTION", "auth failed for [redacted]", 1)

    assert then_events(ready) == [
        (
            ToolInvocation.ToolInvocationReady,
            ready_payload(EvidenceStatus.EVIDENCE_FOUND, "token=[redacted] refused", (), 2),
        )
    ]
    assert then_events(failed)[0][1]["redactions"] == 1
    assert (ready.redactions, failed.redactions) == (2, 1)


@pytest.mark.parametrize("count", [-1, True, 1.5], ids=["negative", "bool", "float"])
def test_a_redaction_count_that_is_not_a_count_is_refused(count: Any) -> None:
    invocation = given()

    then_refused(
        invocation,
        InvalidCommandError,
        lambda i: i.mark_ready(EvidenceStatus.NO_EVIDENCE, "logs of checkout", (), count),
    )
    then_refused(invocation, InvalidCommandError, lambda i: i.fail("EXECUTION", "x", count))


@pytest.mark.parametrize("code", ["", "   "], ids=["empty", "blank"])
def test_fail_refuses_an_empty_error_code(code: str) -> None:
    invocation = given()

    then_refused(invocation, InvalidCommandError, lambda i: i.fail(code, "message"))
    assert invocation.status is InvocationStatus.PROJECTING


# -- READY and ERROR are final -------------------------------------------------------------------

CLOSED: dict[str, Step] = {"ready": ready_with_evidence, "failed": failed}
LATE_COMMANDS: dict[str, Step] = {
    "mark_ready-evidence-found": lambda i: i.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "more"),
    "mark_ready-no-evidence": lambda i: i.mark_ready(EvidenceStatus.NO_EVIDENCE, ""),
    "mark_ready-error": lambda i: i.mark_ready(EvidenceStatus.ERROR, ""),  # type: ignore[arg-type]
    "fail": lambda i: i.fail("EXECUTION", "late failure"),
    "fail-empty-code": lambda i: i.fail("", "late failure"),
}


@pytest.mark.parametrize("command", list(LATE_COMMANDS))
@pytest.mark.parametrize("closed", list(CLOSED))
def test_nothing_is_accepted_after_ready_or_error(closed: str, command: str) -> None:
    invocation = given(CLOSED[closed])
    status, evidence = invocation.status, invocation.evidence_status

    then_refused(invocation, InvocationClosedError, LATE_COMMANDS[command])
    assert (invocation.status, invocation.evidence_status) == (status, evidence)


@pytest.mark.parametrize(
    ("steps", "referenceable"),
    [
        ([], False),
        ([ready_with_evidence], True),
        ([lambda i: i.mark_ready(EvidenceStatus.NO_EVIDENCE, "")], True),
        ([failed], False),
    ],
    ids=["projecting", "ready-evidence-found", "ready-no-evidence", "error"],
)
def test_only_ready_invocations_are_referenceable(steps: list[Step], referenceable: bool) -> None:
    assert given(*steps).is_referenceable is referenceable


# -- replay --------------------------------------------------------------------------------------


@pytest.mark.parametrize("close", [ready_with_evidence, failed], ids=["ready", "failed"])
def test_replaying_the_events_reproduces_the_invocation(close: Step) -> None:
    invocation = ToolInvocation.begin(RUN_ID, "metrics.query", "svc=checkout", ARGUMENTS)
    close(invocation)
    events = invocation.collect_events()

    replayed = replay(ToolInvocation, events)

    assert replayed == invocation
    assert replayed.version == len(events) == 2
