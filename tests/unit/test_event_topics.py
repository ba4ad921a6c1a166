"""Stored topics never change: every record ever written must still decode to the same class.

A stored event names its class by topic (``module:qualname``) and each aggregate's first event
names the aggregate's. Moving an event class, or splitting an aggregate's module, must keep
these strings; the Run aggregate, whose events are declared in layers (``domain.run_core``,
``run_steps``, ``run_guards``, ``run_termination``), relies on eventsourcing redefining each of
them on ``Run`` itself. Enums are stored by class name and value, so their names are pinned too.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, CanMutateAggregate
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    UUIDAsHex,
)
from eventsourcing.utils import get_topic, resolve_topic

from application.transcodings import register_all
from domain.answer_rules import RetrievedPassage
from domain.catalogue import ALL_ENUMS
from domain.checkpoint import AuditCheckpoint
from domain.collection import Collection
from domain.eval_run import EvalRun
from domain.grounding import Citation, JudgedStatement, RejectedCitation
from domain.release_states import CitationProblem, ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.session import Session
from domain.states import (
    BudgetKind,
    ChatApplicationStatus,
    DraftOutcome,
    Intent,
    ModelAttemptFailure,
    ModelStepPurpose,
)
from domain.tool_invocation import ToolInvocation
from domain.tool_states import ToolRejectionCode
from domain.values import Budget, McpSession, ModelAttempt, ModelCall
from tests.eval_reports import AFTER

AGGREGATES: tuple[type[Aggregate], ...] = (
    Run,
    ToolInvocation,
    Collection,
    Session,
    AuditCheckpoint,
    EvalRun,
)

STORED_TOPICS = {
    "domain.run:Run",
    "domain.run:Run.RunStarted",
    "domain.run:Run.RoutingAttempt",
    "domain.run:Run.RoutingDecision",
    "domain.run:Run.ApplicationStatusChanged",
    "domain.run:Run.AgentModelStep",
    "domain.run:Run.BudgetCharged",
    "domain.run:Run.BudgetExhausted",
    "domain.run:Run.ToolRequestRejected",
    "domain.run:Run.EvidenceGuardInitial",
    "domain.run:Run.EvidenceRepair",
    "domain.run:Run.EvidenceGuardRecheck",
    "domain.run:Run.SemanticGuardAttempt",
    "domain.run:Run.SemanticGuardDecision",
    "domain.run:Run.ReleaseDecision",
    "domain.run:Run.CancellationRequested",
    "domain.run:Run.RunTerminated",
    "domain.run:Run.RunFinished",
    "domain.run:Run.DraftProposed",
    "domain.run:Run.PassagesRetrieved",
    "domain.run:Run.AnswerProposed",
    "domain.tool_invocation:ToolInvocation",
    "domain.tool_invocation:ToolInvocation.ToolInvocationStarted",
    "domain.tool_invocation:ToolInvocation.ToolInvocationReady",
    "domain.tool_invocation:ToolInvocation.ToolInvocationFailed",
    "domain.collection:Collection",
    "domain.collection:Collection.CollectionStarted",
    "domain.collection:Collection.ToolProgress",
    "domain.collection:Collection.ProgressProtocolViolation",
    "domain.collection:Collection.CollectionStop",
    "domain.collection:Collection.StopRequiredDelivered",
    "domain.session:Session",
    "domain.session:Session.SessionClaimed",
    "domain.checkpoint:AuditCheckpoint",
    "domain.checkpoint:AuditCheckpoint.CheckpointsStarted",
    "domain.checkpoint:AuditCheckpoint.CheckpointRecorded",
    "domain.eval_run:EvalRun",
    "domain.eval_run:EvalRun.EvalStarted",
    "domain.eval_run:EvalRun.EvalCaseScored",
    "domain.eval_run:EvalRun.EvalFinished",
}
"""Every topic a record may name: the aggregates' and their events' (a record's own class)."""

STORED_ENUM_NAMES = {
    "ModelAttemptFailure",
    "RunState",
    "ChatApplicationStatus",
    "Intent",
    "InvocationStatus",
    "EvidenceStatus",
    "CollectionState",
    "DiagnosisStopReason",
    "SemanticVerdict",
    "ReleaseOutcome",
    "FallbackType",
    "SseSessionState",
    "CancellationReason",
    "FailureCode",
    "CompletionReason",
    "TracePhase",
    "TraceEventStatus",
    "InformationGain",
    "GainSource",
    "ToolRejectionCode",
    "BudgetKind",
    "ModelStepPurpose",
    "ModelStepOutcome",
    "DraftOutcome",
    "GuardStage",
    "CitationProblem",
    "MissingKind",
    "AnswerRefusal",
    "Verdict",
}
"""The ``_type_`` a stored enum value is written under: its class name, whatever its module."""

DEADLINE = datetime(2030, 1, 1, tzinfo=UTC)
LIMITS = Budget(model_calls=3, tool_calls=2, tokens=100, bytes=1_000)


def _event_classes(aggregate: type[Aggregate]) -> dict[str, type[Any]]:
    return {
        name: value
        for name, value in vars(aggregate).items()
        if isinstance(value, type)
        and issubclass(value, CanMutateAggregate)
        and name not in ("Event", "Created")
    }


def _mapper() -> Mapper[UUID]:
    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        transcoder.register(transcoding)
    register_all(transcoder)
    return Mapper(transcoder=transcoder)


def _released_diagnosis() -> Run:
    """A run through every step, guard and release event to its finish."""
    run = Run.start("s", "why?", DEADLINE, limits=LIMITS, run_id=UUID(int=1), owner="ann")
    run.attempt_routing()
    run.decide_routing(Intent.DIAGNOSIS)
    run.change_status(ChatApplicationStatus.DIAGNOSIS_RUNNING)
    run.record_model_step(ModelStepPurpose.AGENT, 10, 5, 7)
    run.charge(BudgetKind.TOOL_CALLS, 1, "ref")
    run.reject_tool_request("logs", ToolRejectionCode.AUTH, "no")
    run.propose_draft(ModelStepPurpose.AGENT, "{}", DraftOutcome.VALID)
    rejected = RejectedCitation("conclusion", "ref", "excerpt", CitationProblem.OTHER_RUN)
    run.check_evidence(True, False, ("ref",), 1, (rejected,))
    run.repair_evidence("fixed")
    run.recheck_evidence(True)
    run.attempt_semantic_guard()
    judged = JudgedStatement("c", (Citation("ref", "excerpt"),), SemanticVerdict.SUPPORTED)
    run.decide_semantic_guard(SemanticVerdict.SUPPORTED, judged=(judged,))
    run.decide_release(ReleaseOutcome.SUCCESS, None, {"conclusion": "c"})
    run.complete()
    run.finish(DEADLINE)
    return run


def _judged_answer() -> Run:
    """A knowledge answer: passages retrieved, an answer proposed, judged and released."""
    run = Run.start("s", "how?", DEADLINE, limits=LIMITS, run_id=UUID(int=3))
    run.attempt_routing()
    run.decide_routing(Intent.KNOWLEDGE_QUERY)
    run.retrieve_passages((RetrievedPassage("a#b", "A", "Restart the pods one by one."),))
    run.propose_answer('{"statements": []}', None)
    run.attempt_semantic_guard()
    judged = JudgedStatement("s", (Citation("a#b", "Restart the pods"),), SemanticVerdict.SUPPORTED)
    run.decide_semantic_guard(SemanticVerdict.SUPPORTED, judged=(judged,))
    run.decide_release(ReleaseOutcome.SUCCESS, None, {"text": "s"})
    return run


def _exhausted() -> Run:
    """A run whose charge takes it over its budget: exhausted, cancelled, finished."""
    run = Run.start("s", "why?", DEADLINE, limits=LIMITS, run_id=UUID(int=2))
    run.charge(BudgetKind.BYTES, 5_000)
    run.finish(DEADLINE)
    return run


def test_every_stored_topic_is_pinned() -> None:
    topics = {get_topic(aggregate) for aggregate in AGGREGATES}
    for aggregate in AGGREGATES:
        topics |= {get_topic(cls) for cls in _event_classes(aggregate).values()}
    assert topics == STORED_TOPICS


def test_every_pinned_topic_resolves_to_the_class_its_aggregate_records() -> None:
    for aggregate in AGGREGATES:
        assert resolve_topic(get_topic(aggregate)) is aggregate
        for name, cls in _event_classes(aggregate).items():
            topic = f"{get_topic(aggregate)}.{name}"
            assert topic in STORED_TOPICS
            assert resolve_topic(topic) is cls is getattr(aggregate, name)


def test_every_run_event_is_recorded_and_read_back_under_its_pinned_topic() -> None:
    mapper = _mapper()
    recorded: set[str] = set()
    for run in (_released_diagnosis(), _judged_answer(), _exhausted()):
        for event in run.collect_events():
            stored = mapper.to_stored_event(event)
            assert stored.topic in STORED_TOPICS
            assert type(mapper.to_domain_event(stored)) is type(event)
            recorded.add(type(event).__name__)
    assert recorded == set(_event_classes(Run))


def test_a_record_written_before_the_split_still_decodes() -> None:
    state = {
        "timestamp": {"_type_": "datetime_iso", "_data_": DEADLINE.isoformat()},
        "kind": {"_type_": "BudgetKind", "_data_": "BYTES"},
        "limit": 1000,
        "used": 5000,
        "stop_reason": {"_type_": "DiagnosisStopReason", "_data_": "BUDGET_LIMIT_REACHED"},
    }
    topic = "domain.run:Run.BudgetExhausted"
    stored = StoredEvent(UUID(int=3), 2, topic, json.dumps(state).encode())
    event = _mapper().to_domain_event(stored)
    assert type(event) is Run.BudgetExhausted
    assert (event.kind, event.used) == (BudgetKind.BYTES, 5000)


def _model_step_of_version(version: int, purpose: str, **fields: object) -> Any:
    """An ``AGENT_MODEL_STEP`` as a version of it recorded it, decoded by today's mapper."""
    state = {
        "timestamp": {"_type_": "datetime_iso", "_data_": DEADLINE.isoformat()},
        "purpose": {"_type_": "ModelStepPurpose", "_data_": purpose},
        "tokens_in": 3,
        "tokens_out": 4,
        "latency_ms": 5,
        "outcome": {"_type_": "ModelStepOutcome", "_data_": "OK"},
        "detail": "",
        "bound_ms": 9,
        **fields,
        "originator_topic": "domain.run:Run",
        "class_version": version,
    }
    stored = StoredEvent(
        UUID(int=4), 2, "domain.run:Run.AgentModelStep", json.dumps(state).encode()
    )
    event = _mapper().to_domain_event(stored)
    assert type(event) is Run.AgentModelStep
    return event


def test_a_model_step_recorded_before_providers_were_named_still_decodes() -> None:
    event = _model_step_of_version(2, "AGENT")
    assert (event.bound_ms, event.provider, event.model, event.finish_reason) == (9, "", "", "")


def test_a_model_step_of_version_4_reads_as_one_without_retried_attempts() -> None:
    event = _model_step_of_version(
        4,
        "ROUTE",
        provider="offline",
        model="",
        finish_reason="stop",
        text="{}",
        length=2,
        sha256="",
    )
    assert (event.text, event.attempts) == ("{}", ())


def test_a_model_steps_attempts_round_trip_through_the_store() -> None:
    tried = (ModelAttempt(ModelAttemptFailure.RATE_LIMITED, 429, 1500),)
    run = Run.start("s", "why?", DEADLINE, limits=LIMITS, run_id=UUID(int=5))
    run.attempt_routing()
    run.record_model_step(ModelStepPurpose.ROUTE, 1, 1, 2000, attempts=tried)
    mapper = _mapper()
    [step] = [e for e in run.collect_events() if isinstance(e, Run.AgentModelStep)]
    decoded = mapper.to_domain_event(mapper.to_stored_event(step))
    assert isinstance(decoded, Run.AgentModelStep)
    assert tuple(decoded.attempts) == tried  # JSON arrays decode as lists, like `judged`


def test_a_model_step_of_version_5_reads_as_one_without_what_the_wire_told() -> None:
    event = _model_step_of_version(
        5,
        "AGENT",
        provider="openai-compatible",
        model="m",
        finish_reason="stop",
        text="",
        length=2,
        sha256="",
        attempts=[],
    )
    assert (event.provider, tuple(event.attempts)) == ("openai-compatible", ())
    assert event.call == ModelCall()  # nothing of the wire was recorded


def test_what_the_wire_told_and_an_mcp_session_round_trip_through_the_store() -> None:
    wire = ModelCall("api.example.com", 443, "chatcmpl-1", "m-0613", "fp", "default", "json", "")
    run = Run.start("s", "why?", DEADLINE, limits=LIMITS, run_id=UUID(int=5))
    run.attempt_routing()
    run.record_model_step(ModelStepPurpose.ROUTE, 1, 1, 20, call=wire)
    session = McpSession("ops", "http", "mcp.example.com", 8443, "2025-06-18", "s-1")
    begun = ToolInvocation.begin(UUID(int=5), "t", "{}", {}, call_id="call_1", mcp=session)
    mapper = _mapper()
    [step] = [e for e in run.collect_events() if isinstance(e, Run.AgentModelStep)]
    [start] = begun.collect_events()
    decoded = [mapper.to_domain_event(mapper.to_stored_event(e)) for e in (step, start)]
    assert isinstance(decoded[0], Run.AgentModelStep) and decoded[0].call == wire
    assert isinstance(decoded[1], ToolInvocation.ToolInvocationStarted)
    assert (decoded[1].call_id, decoded[1].mcp) == ("call_1", session)


def test_a_tool_begin_of_version_2_reads_as_one_without_a_call_id_or_session() -> None:
    state = {
        "timestamp": {"_type_": "datetime_iso", "_data_": DEADLINE.isoformat()},
        "originator_topic": "domain.tool_invocation:ToolInvocation",
        "run_id": {"_type_": "uuid_hex", "_data_": UUID(int=1).hex},
        "tool": "uptime",
        "normalized_scope": "{}",
        "arguments": {},
        "origin": "mcp:ops",
        "read_only_override": False,
        "class_version": 2,
    }
    topic = "domain.tool_invocation:ToolInvocation.ToolInvocationStarted"
    stored = StoredEvent(UUID(int=4), 1, topic, json.dumps(state).encode())
    event = _mapper().to_domain_event(stored)
    assert type(event) is ToolInvocation.ToolInvocationStarted
    assert (event.origin, event.call_id, event.mcp) == ("mcp:ops", "", None)


def test_a_tool_begin_of_version_1_reads_as_a_builtin_tool_without_override() -> None:
    state = {
        "timestamp": {"_type_": "datetime_iso", "_data_": DEADLINE.isoformat()},
        "originator_topic": "domain.tool_invocation:ToolInvocation",
        "run_id": {"_type_": "uuid_hex", "_data_": UUID(int=1).hex},
        "tool": "search_logs",
        "normalized_scope": "service=checkout",
        "arguments": {"service": "checkout"},
    }
    topic = "domain.tool_invocation:ToolInvocation.ToolInvocationStarted"
    stored = StoredEvent(UUID(int=4), 1, topic, json.dumps(state).encode())
    event = _mapper().to_domain_event(stored)
    assert type(event) is ToolInvocation.ToolInvocationStarted
    assert (event.origin, event.read_only_override) == ("builtin", False)
    invocation = event.mutate(None)
    assert invocation is not None
    assert (invocation.tool, invocation.origin) == ("search_logs", "builtin")


def test_a_ready_result_of_version_1_reads_with_no_notes_apart() -> None:
    state = {
        "timestamp": {"_type_": "datetime_iso", "_data_": DEADLINE.isoformat()},
        "originator_topic": "domain.tool_invocation:ToolInvocation",
        "evidence_status": {"_type_": "EvidenceStatus", "_data_": "EVIDENCE_FOUND"},
        "content": "ERROR timeout after 30s\n[4 more records truncated]",  # notes were content
        "byte_size": 49,
        "content_hash": "0" * 64,
    }
    topic = "domain.tool_invocation:ToolInvocation.ToolInvocationReady"
    stored = StoredEvent(UUID(int=4), 2, topic, json.dumps(state).encode())
    event = _mapper().to_domain_event(stored)
    assert type(event) is ToolInvocation.ToolInvocationReady
    assert (event.content, event.notes, event.redactions) == (state["content"], (), 0)


def test_a_ready_result_of_version_2_and_a_failure_of_version_1_read_with_no_redactions() -> None:
    """Before redaction was counted, nothing was redacted: the upcast says 0."""
    ready = {
        "timestamp": {"_type_": "datetime_iso", "_data_": DEADLINE.isoformat()},
        "originator_topic": "domain.tool_invocation:ToolInvocation",
        "evidence_status": {"_type_": "EvidenceStatus", "_data_": "EVIDENCE_FOUND"},
        "content": "ERROR timeout after 30s",
        "byte_size": 23,
        "content_hash": "0" * 64,
        "notes": ["[2 more records truncated]"],
        "class_version": 2,
    }
    failed = {
        "timestamp": {"_type_": "datetime_iso", "_data_": DEADLINE.isoformat()},
        "originator_topic": "domain.tool_invocation:ToolInvocation",
        "error_code": "EXECUTION",
        "message": "it failed",
    }
    kinds = {"Ready": ready, "Failed": failed}
    for kind, state in kinds.items():
        topic = f"domain.tool_invocation:ToolInvocation.ToolInvocation{kind}"
        stored = StoredEvent(UUID(int=4), 2, topic, json.dumps(state).encode())
        event = _mapper().to_domain_event(stored)
        assert type(event).__name__ == f"ToolInvocation{kind}"
        assert getattr(event, "redactions", None) == 0
        assert getattr(event, "error_type", "") == ""  # a failure's class came with v3


def test_enums_are_stored_under_their_class_names() -> None:
    assert {enum.__name__ for enum in ALL_ENUMS} == STORED_ENUM_NAMES
    transcoder = JSONTranscoder()
    register_all(transcoder)
    for enum in ALL_ENUMS:
        member = next(iter(enum))
        encoded = json.loads(transcoder.encode({"v": member}))["v"]
        assert encoded == {"_type_": enum.__name__, "_data_": member.value}


def test_an_evaluation_is_recorded_and_read_back_under_its_pinned_topics() -> None:
    mapper = _mapper()
    evaluation = EvalRun.of_report(AFTER)
    decoded: list[Any] = []
    for event in evaluation.collect_events():
        stored = mapper.to_stored_event(event)
        assert stored.topic in STORED_TOPICS
        decoded.append(mapper.to_domain_event(stored))
    assert [type(e).__name__ for e in decoded] == [
        "EvalStarted",
        *["EvalCaseScored"] * len(AFTER.results),
        "EvalFinished",
    ]
    replayed: Any = None
    for each in decoded:
        replayed = each.mutate(replayed)
    assert isinstance(replayed, EvalRun)
    assert replayed.report() == AFTER  # the verdicts come back as Verdict, the reasons as tuples
