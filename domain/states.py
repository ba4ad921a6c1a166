"""Every state axis of SPEC §2 and the small enumerations the events carry.

The axes are orthogonal and never merged (SPEC §2): each is its own ``StrEnum`` so that a value
of one axis can never be mistaken for a value of another, and so that stored events stay readable.
"""

from __future__ import annotations

from enum import Enum
from typing import assert_never


class RunState(Enum):
    """Lifecycle of a run; RUNNING until exactly one termination (SPEC §4)."""

    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMED_OUT = "TIMED_OUT"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"


class DbStatus(Enum):
    """A run's ``status`` in the run table (SPEC §12): not a RunState nor a ReleaseOutcome.

    RUNNING until ``RUN_FINISHED``, then by the ReleaseOutcome (:data:`domain.release.DB_STATUS`);
    the column holds the value as text.
    """

    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class ChatApplicationStatus(Enum):
    """User-visible phase sent as an SSE ``status``; not a lifecycle (SPEC §6)."""

    ROUTING = "ROUTING"
    SYSTEM_RESPONDING = "SYSTEM_RESPONDING"
    KNOWLEDGE_SEARCHING = "KNOWLEDGE_SEARCHING"
    KNOWLEDGE_ANSWERING = "KNOWLEDGE_ANSWERING"
    DIAGNOSIS_RUNNING = "DIAGNOSIS_RUNNING"
    SAFETY_VALIDATING = "SAFETY_VALIDATING"


class Intent(Enum):
    """What the router decided a query is (SPEC §0)."""

    SYSTEM_CHAT = "SYSTEM_CHAT"
    KNOWLEDGE_QUERY = "KNOWLEDGE_QUERY"
    DIAGNOSIS = "DIAGNOSIS"


class InvocationStatus(Enum):
    """Lifecycle of a tool invocation that passed preflight (SPEC §8)."""

    PROJECTING = "PROJECTING"
    READY = "READY"
    ERROR = "ERROR"


class EvidenceStatus(Enum):
    """What a tool invocation found; null while PROJECTING (SPEC §8)."""

    EVIDENCE_FOUND = "EVIDENCE_FOUND"
    NO_EVIDENCE = "NO_EVIDENCE"
    ERROR = "ERROR"


class CollectionState(Enum):
    """Per-run evidence collection; SATURATED is terminal for collection only (SPEC §9)."""

    COLLECTING = "COLLECTING"
    SATURATED = "SATURATED"


class DiagnosisStopReason(Enum):
    """Why the tool loop stopped in a controlled way (SPEC §7, §9)."""

    INFORMATION_SATURATED = "INFORMATION_SATURATED"
    PROGRESS_PROTOCOL_VIOLATED = "PROGRESS_PROTOCOL_VIOLATED"
    BUDGET_LIMIT_REACHED = "BUDGET_LIMIT_REACHED"


class SemanticVerdict(Enum):
    """The semantic judge's verdict; "unavailable" is a technical outcome, not a verdict."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ReleaseOutcome(Enum):
    """What the user was given (SPEC §10); not a RunState."""

    SUCCESS = "SUCCESS"
    FALLBACK = "FALLBACK"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class FallbackType(Enum):
    """Why a safe fallback was published instead of a conclusion (SPEC §10)."""

    MISSING_REQUIRED_CONTEXT = "MISSING_REQUIRED_CONTEXT"
    INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"
    EVIDENCE_VALIDATION_FAILED = "EVIDENCE_VALIDATION_FAILED"
    SEMANTIC_UNSUPPORTED = "SEMANTIC_UNSUPPORTED"
    SEMANTIC_UNAVAILABLE = "SEMANTIC_UNAVAILABLE"


class SseSessionState(Enum):
    """State of one SSE connection (SPEC §11)."""

    NEW = "NEW"
    OPEN = "OPEN"
    TERMINAL = "TERMINAL"
    DISCONNECTED = "DISCONNECTED"


class CancellationReason(Enum):
    """Why a run was asked to stop; the first reason wins (SPEC §5)."""

    CLIENT_DISCONNECTED = "CLIENT_DISCONNECTED"
    USER_REQUESTED = "USER_REQUESTED"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    INTERNAL_FAILURE = "INTERNAL_FAILURE"


class FailureCode(Enum):
    """Termination reason of a FAILED run that was not cancelled (SPEC §4 "failure code")."""

    ROUTING_FAILED = "ROUTING_FAILED"
    MODEL_FAILED = "MODEL_FAILED"
    INVALID_DRAFT = "INVALID_DRAFT"
    NO_SAFE_CONTENT = "NO_SAFE_CONTENT"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    WORKER_LOST = "WORKER_LOST"


class CompletionReason(Enum):
    """Termination reason of a SUCCESS run."""

    COMPLETED = "COMPLETED"


TerminationReason = CancellationReason | FailureCode | CompletionReason
"""A termination records the cancellation reason, the failure code, or COMPLETED."""


class TracePhase(Enum):
    """Groups trace events on the timeline (SPEC §13); not a lifecycle."""

    RUN = "RUN"
    ROUTING = "ROUTING"
    AGENT = "AGENT"
    TOOL = "TOOL"
    COLLECTION = "COLLECTION"
    GUARD = "GUARD"
    RELEASE = "RELEASE"


class TraceEventStatus(Enum):
    """How a trace event went (SPEC §13)."""

    OK = "OK"
    REJECTED = "REJECTED"
    ERROR = "ERROR"
    INFO = "INFO"


class InformationGain(Enum):
    """Whether a tool result added information (SPEC §9)."""

    GAINED = "GAINED"
    NO_GAIN = "NO_GAIN"


class GainSource(Enum):
    """Who decided a gain verdict: the harness (NO_EVIDENCE, exact repeat) or the agent."""

    HARNESS = "HARNESS"
    AGENT = "AGENT"


class ToolRejectionCode(Enum):
    """Why a tool request was rejected at preflight, before any invocation record (SPEC §8)."""

    INVALID_RUN = "INVALID_RUN"
    INVALID_ID = "INVALID_ID"
    AUTH = "AUTH"
    NOT_READ_ONLY = "NOT_READ_ONLY"
    INVALID_REQUEST = "INVALID_REQUEST"
    BUDGET = "BUDGET"
    STORE = "STORE"


class ToolErrorCode(Enum):
    """The harness's own error codes of a failed tool invocation (SPEC §8).

    ``TOOL_INVOCATION_FAILED`` stores its code as text, as it always has: a tool may also fail
    with a code of its own, and logs written before this enum must read the same.
    """

    TIMEOUT = "TIMEOUT"
    EXECUTION = "EXECUTION"
    MALFORMED = "MALFORMED"
    SIZE = "SIZE"
    BUDGET = "BUDGET"
    ABANDONED = "ABANDONED"


class BudgetKind(Enum):
    """The four hard budgets of a run (SPEC §4)."""

    MODEL_CALLS = "MODEL_CALLS"
    TOOL_CALLS = "TOOL_CALLS"
    TOKENS = "TOKENS"
    BYTES = "BYTES"


class ModelStepPurpose(Enum):
    """Why a model was called (SPEC §17 ``AGENT_MODEL_STEP``)."""

    ROUTE = "ROUTE"
    ANSWER = "ANSWER"
    AGENT = "AGENT"
    REPAIR = "REPAIR"
    JUDGE = "JUDGE"


class DraftOutcome(Enum):
    """How a draft the model proposed parsed (SPEC §7, §10.1); only a VALID one goes on."""

    VALID = "VALID"
    EMPTY_DRAFT = "EMPTY_DRAFT"
    INVALID_JSON = "INVALID_JSON"
    SCHEMA_INVALID = "SCHEMA_INVALID"


class ModelStepOutcome(Enum):
    """How a model call ended."""

    OK = "OK"
    FAILED = "FAILED"
    DISCARDED = "DISCARDED"


class GuardStage(Enum):
    """How far a run's release pipeline has gone; each stage is recorded by one event."""

    NONE = "NONE"
    EVIDENCE_CHECKED = "EVIDENCE_CHECKED"
    REPAIRED = "REPAIRED"
    RECHECKED = "RECHECKED"
    SEMANTIC_ATTEMPTED = "SEMANTIC_ATTEMPTED"
    SEMANTIC_DECIDED = "SEMANTIC_DECIDED"
    DECIDED = "DECIDED"


class CitationProblem(Enum):
    """Why a citation does not prove its statement (design §10.1; recorded by the guard)."""

    UNKNOWN_REFERENCE = "UNKNOWN_REFERENCE"
    """Not the id of any source of this run (malformed, respelled or made up)."""
    OTHER_RUN = "OTHER_RUN"
    """A tool invocation of another run."""
    NOT_EVIDENCE = "NOT_EVIDENCE"
    """A source that holds no evidence: not READY + EVIDENCE_FOUND (NO_EVIDENCE, failed, open)."""
    EXCERPT_ABSENT = "EXCERPT_ABSENT"
    """The excerpt does not occur in the cited source's content (after normalisation)."""
    EXCERPT_TOO_WEAK = "EXCERPT_TOO_WEAK"
    """The excerpt is too short or holds only digits, punctuation or stop words."""
    DUPLICATE = "DUPLICATE"
    """The same reference and excerpt cited twice by one statement."""
    NO_CITATION = "NO_CITATION"
    """A statement without any citation."""


class MissingKind(Enum):
    """What a draft may say is missing; the harness words it (never the model's prose)."""

    SERVICE = "SERVICE"
    TIME_WINDOW = "TIME_WINDOW"
    SYMPTOM = "SYMPTOM"
    ENVIRONMENT = "ENVIRONMENT"


ALL_ENUMS: tuple[type[Enum], ...] = (
    RunState,
    ChatApplicationStatus,
    Intent,
    InvocationStatus,
    EvidenceStatus,
    CollectionState,
    DiagnosisStopReason,
    SemanticVerdict,
    ReleaseOutcome,
    FallbackType,
    SseSessionState,
    CancellationReason,
    FailureCode,
    CompletionReason,
    TracePhase,
    TraceEventStatus,
    InformationGain,
    GainSource,
    ToolRejectionCode,
    BudgetKind,
    ModelStepPurpose,
    ModelStepOutcome,
    DraftOutcome,
    GuardStage,
    CitationProblem,
    MissingKind,
)
"""Every enum that may appear in an event; the store registers a transcoding for each."""


def state_for_reason(reason: TerminationReason) -> RunState:
    """The RunState a termination reason maps to (SPEC §5), the one mapping in the code base."""
    match reason:
        case CancellationReason.CLIENT_DISCONNECTED | CancellationReason.USER_REQUESTED:
            return RunState.CANCELLED
        case CancellationReason.DEADLINE_EXCEEDED:
            return RunState.TIMED_OUT
        case CancellationReason.BUDGET_EXHAUSTED:
            return RunState.BUDGET_EXHAUSTED
        case CancellationReason.INTERNAL_FAILURE:
            return RunState.FAILED
        case FailureCode():
            return RunState.FAILED
        case CompletionReason.COMPLETED:
            return RunState.SUCCESS
        case _:
            assert_never(reason)
