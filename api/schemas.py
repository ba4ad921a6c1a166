"""Request and response bodies of runs, chats and sessions (``XCreate`` in, ``XPublic`` out).

The operators' bodies (health, projections, the audit log, daily totals, workers, tools) are in
:mod:`api.schemas_ops`.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID  # noqa: TC003

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from api.params import SessionId, as_utc
from domain.release_states import FallbackType, ReleaseOutcome
from domain.states import RunState
from domain.values import SESSION_ID_PATTERN

if TYPE_CHECKING:
    from infrastructure.settings import Settings

SESSION_PATTERN = SESSION_ID_PATTERN


UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]
"""Every time the API shows: RFC 3339 with its offset, in UTC."""


def _json_number(value: object) -> object:
    """Only what JSON calls a number: pydantic's lax mode took ``true`` for 1 and ``"5"`` for 5.

    Not pydantic's strict mode, which refuses ``16.0`` for an integer (JSON Schema's "integer"
    allows it, and so does the document) and, for a whole model in FastAPI's validation (Python
    mode), an ISO time or a UUID given as JSON text.
    """
    if isinstance(value, bool):
        raise PydanticCustomError("number_type", "Input should be a number, not true or false")
    if not isinstance(value, int | float):
        raise PydanticCustomError(
            "number_type",
            "Input should be a number, not {kind}",
            {"kind": "text" if isinstance(value, str) else type(value).__name__},
        )
    return value


JSON_NUMBER = BeforeValidator(_json_number)
"""Beside ``int`` (``2.0`` is 2; ``2.5`` is refused) or ``float``, after its bounds (which then
stay in the document as ``minimum``, not beside it)."""


class BudgetCreate(BaseModel):
    """Limits for one run; each at most the configured one (omitted: the configured one)."""

    model_config = ConfigDict(extra="forbid")

    model_calls: Annotated[int, Field(ge=1), JSON_NUMBER] | None = Field(
        None,
        description="Model calls the run may make (at most HARNESS_BUDGET_MODEL_CALLS).",
    )
    tool_calls: Annotated[int, Field(ge=0), JSON_NUMBER] | None = Field(
        None,
        description="Tool calls the run may make (at most HARNESS_BUDGET_TOOL_CALLS).",
    )
    tokens: Annotated[int, Field(ge=1), JSON_NUMBER] | None = Field(
        None,
        description="Model tokens, prompt and answer together, the run may use (at most"
        " HARNESS_BUDGET_TOKENS).",
    )
    bytes: Annotated[int, Field(ge=0), JSON_NUMBER] | None = Field(
        None,
        description="Bytes of tool output the run may take in (at most HARNESS_BUDGET_BYTES).",
    )


QUERY_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"
"""What the document says a query is: not only spaces, and no NUL."""


def _without_nul(text: str) -> str:
    """Refuse NUL: PostgreSQL text cannot hold it, so the read tables could not show the run."""
    if "\x00" in text:
        raise ValueError("must not contain NUL characters (\\u0000)")
    return text


class ChatCreate(BaseModel):
    """A question for the harness."""

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, AfterValidator(_without_nul)] = Field(
        min_length=1,
        pattern=r"\S",
        json_schema_extra={"pattern": QUERY_PATTERN},  # r"\S" and no NUL, as one pattern
        description="What to ask (not only spaces, no NUL; at most HARNESS_MAX_QUERY_CHARS).",
    )
    session_id: SessionId | None = Field(
        None, description="Continue a session of yours; omitted: a new session."
    )
    budget: BudgetCreate | None = Field(None, description="Tighter limits for this run.")
    deadline_s: Annotated[float, Field(gt=0), JSON_NUMBER] | None = Field(
        None, description="Seconds this run may take (at most HARNESS_RUN_DEADLINE)."
    )


class RunCreated(BaseModel):
    """A run started in the background: where to watch it."""

    run_id: UUID
    session_id: str
    position: int = Field(description="Log position of its RUN_STARTED (read-your-writes).")
    stream: str = Field(description="Its event stream: GET this URL.")


class RunPublic(BaseModel):
    """One run as the read side holds it (the diagnosis_run row, SPEC §12)."""

    model_config = ConfigDict(from_attributes=True)

    run_id: UUID
    session_id: str
    owner: str
    query: str
    intent: str | None
    status: str = Field(description="RUNNING, then SUCCESS, FAILED or CANCELLED (SPEC §12).")
    application_status: str | None
    release_outcome: ReleaseOutcome | None
    fallback_type: FallbackType | None
    termination_state: RunState | None
    termination_reason: str | None
    stop_reason: str | None
    safe_answer: dict[str, Any] | None
    conclusion: str | None
    published_result: dict[str, Any] | None
    created_at: UtcDatetime
    deadline: UtcDatetime
    finished_at: UtcDatetime | None
    duration_ms: int | None
    tokens_in: int
    tokens_out: int
    model_calls: int
    agent_steps: int
    tool_calls: int
    rejected_tool_requests: int
    last_position: int


class RunNotShownPublic(BaseModel):
    """A run the service accepted that its read tables do not show yet (202; see Retry-After)."""

    run_id: UUID
    detail: str


class RunsPublic(BaseModel):
    """A page of runs, newest first."""

    data: list[RunPublic]
    count: int = Field(description="Runs matching the filters in all, counted up to 10,000.")
    count_capped: bool = Field(description="More than 10,000 runs match: count is a lower bound.")
    limit: int
    offset: int
    next_cursor: str | None = Field(
        description="Pass as cursor for the next (older) page; null on the last page."
    )


class TraceEventPublic(BaseModel):
    """One event on a run's timeline (SPEC §13)."""

    position: int
    stream_id: UUID
    stream_version: int
    event_type: str
    phase: str
    status: str
    timestamp: UtcDatetime
    attributes: dict[str, Any]


class TracePublic(BaseModel):
    """A run's timeline in log order."""

    run_id: UUID
    data: list[TraceEventPublic]
    count: int


class CancelPublic(BaseModel):
    """What a cancel request did: the run's one termination (first one wins)."""

    run_id: UUID
    cancelled: bool = Field(description="False when the run had already ended.")
    termination_state: RunState
    termination_reason: str
    position: int | None = Field(description="Log position of the cancel, when it was recorded.")


class TurnPublic(BaseModel):
    """One turn of a session."""

    turn: int
    run_id: UUID
    query: str
    intent: str | None
    release_outcome: ReleaseOutcome | None
    published_result: dict[str, Any] | None
    created_at: UtcDatetime
    finished_at: UtcDatetime | None


class SessionPublic(BaseModel):
    """A session's turns in order."""

    session_id: str
    owner: str
    data: list[TurnPublic]
    count: int


class ProblemPublic(BaseModel):
    """An error: RFC 9457 problem details, ``detail`` saying what went wrong and what to do."""

    type: str = Field(
        "about:blank", description="A URI naming the problem; about:blank: the status says it"
    )
    title: str = Field(description="The status's phrase, e.g. Not Found.")
    status: int = Field(description="The HTTP status code, as in the response.")
    detail: str = Field(description="What was wrong and what to do, in one or two sentences.")


def document_limits(document: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """Write the configured limits into the OpenAPI document (they are settings, not constants).

    A request the service accepts is then exactly a request the document allows.
    """
    components = document.get("components", {}).get("schemas", {})
    chat = components.get("ChatCreate", {}).get("properties", {})
    if "query" in chat:
        chat["query"]["maxLength"] = settings.max_query_chars
    _maximum(chat.get("deadline_s"), settings.run_deadline)
    budget = components.get("BudgetCreate", {}).get("properties", {})
    for name, ceiling in asdict(settings.limits).items():
        _maximum(budget.get(name), ceiling)
    return document


def _maximum(field: dict[str, Any] | None, ceiling: float) -> None:
    """Set ``ceiling`` as the ``maximum`` of a numeric field, or of its numeric choice."""
    for choice in (field or {}).get("anyOf", [field] if field else []):
        if choice.get("type") in ("number", "integer"):
            choice["maximum"] = ceiling
