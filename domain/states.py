"""A run's state axes (SPEC §2) and the small enumerations its events carry.

The axes are orthogonal and never merged (SPEC §2): each is its own ``Enum`` so that a value of
one axis can never be mistaken for a value of another, and so that stored events stay readable.
The axes of tools and evidence collection are in :mod:`domain.tool_states`, the release's words
in :mod:`domain.release_states`; :data:`domain.catalogue.ALL_ENUMS` lists every one events carry.
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
    TOO_LARGE = "TOO_LARGE"
    """Over :data:`MAX_MODEL_OUTPUT_CHARS`: refused whole, unread; only its length and hash kept."""


class ModelStepOutcome(Enum):
    """How a model call ended."""

    OK = "OK"
    FAILED = "FAILED"
    DISCARDED = "DISCARDED"
    TOO_LARGE = "TOO_LARGE"
    """An answer came, over :data:`MAX_MODEL_OUTPUT_CHARS`: refused whole before it was read."""


class ModelAttemptFailure(Enum):
    """Why one attempt of a model call failed and was tried again (a retryable failure)."""

    RATE_LIMITED = "RATE_LIMITED"
    """HTTP 429: the provider asked to wait."""
    SERVER_ERROR = "SERVER_ERROR"
    """HTTP 5xx: the provider failed."""
    CONNECTION = "CONNECTION"
    """The connection failed or was reset before an answer came."""
    TIMEOUT = "TIMEOUT"
    """The attempt got no answer within its own timeout (time was left for another)."""


MAX_MODEL_OUTPUT_CHARS = 32_000
"""The longest model answer the harness reads, in characters (design §10.1).

One definition for every model call (router, answers, agent, repair, judge): an answer over it
is refused whole before it is parsed, so whatever the log records of a model's answer is whole.
A fixed size, not a setting: the verifier judges every log by it, whoever wrote the log.
"""


class MissingKind(Enum):
    """What a draft may say is missing; the harness words it (never the model's prose)."""

    SERVICE = "SERVICE"
    TIME_WINDOW = "TIME_WINDOW"
    SYMPTOM = "SYMPTOM"
    ENVIRONMENT = "ENVIRONMENT"


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
