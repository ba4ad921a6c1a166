"""Response bodies of the operators' routes: what the service and its log look like.

Health and readiness, the projections' positions and rebuilds, the audit log's pages and
verification, daily totals, the workers' leases, the tools offered and the model check.
"""

from __future__ import annotations

from datetime import date  # noqa: TC003
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID  # noqa: TC003 (pydantic reads it)

from pydantic import BaseModel, Field

from application.tool_admission import AdmittedBy, Refusal  # noqa: TC001 (pydantic reads them)

if TYPE_CHECKING:
    from infrastructure.tool_catalog import ToolView


class DailyGroupPublic(BaseModel):
    """One ``run_daily`` row: the runs of one UTC day and group that have finished."""

    day: date
    intent: str = Field(description="'' when the run was never routed.")
    release_outcome: str
    fallback_type: str = Field(description="'' unless the release was a FALLBACK.")
    termination_state: str
    runs: int
    duration_p50_ms: float = Field(description="The group's median duration (nearest rank).")
    duration_p95_ms: float = Field(description="The group's 95th percentile (nearest rank).")
    tokens_in: int
    tokens_out: int


class DailyPublic(BaseModel):
    """Finished runs per day and group, over every user's runs (``run_daily`` has no owner)."""

    first_day: date
    last_day: date
    data: list[DailyGroupPublic]
    count: int


class ToolStatsGroupPublic(BaseModel):
    """One ``tool_stats`` row: the tool calls of one UTC day and group that ended."""

    day: date
    tool: str
    origin: str = Field(description="builtin, plugin:NAME or mcp:SERVER.")
    outcome: str = Field(description="EVIDENCE_FOUND, NO_EVIDENCE or ERROR.")
    error_code: str = Field(description="The failure's code; '' unless ERROR.")
    calls: int
    duration_p50_ms: float = Field(description="The group's median duration (nearest rank).")
    duration_p95_ms: float = Field(description="The group's 95th percentile (nearest rank).")
    result_bytes: int


class ToolStatsPublic(BaseModel):
    """Ended tool calls per day and group, over every user's runs (``tool_stats``)."""

    first_day: date
    last_day: date
    data: list[ToolStatsGroupPublic]
    count: int


class ModelStatsGroupPublic(BaseModel):
    """One ``model_stats`` row: the model calls of one UTC day and group."""

    day: date
    provider: str
    model: str
    purpose: str = Field(description="ROUTE, ANSWER, AGENT, REPAIR or JUDGE.")
    outcome: str
    error_type: str = Field(description="The failure's class; '' when none.")
    calls: int
    latency_p50_ms: float = Field(description="The group's median latency (nearest rank).")
    latency_p95_ms: float = Field(description="The group's 95th percentile (nearest rank).")
    tokens_in: int
    tokens_out: int


class ModelStatsPublic(BaseModel):
    """Model calls per day and group, over every user's runs (``model_stats``)."""

    first_day: date
    last_day: date
    data: list[ModelStatsGroupPublic]
    count: int


class LeasePublic(BaseModel):
    """One worker process and its lease (times in epoch seconds, by the database's clock)."""

    worker_id: str
    host: str
    pid: int
    started_at: float
    beat_at: float
    expires_at: float
    state: Literal["LIVE", "EXPIRED", "DEAD"] = Field(
        description="LIVE: beating; EXPIRED: past its expiry; DEAD: its process is proved gone."
    )


class WorkersPublic(BaseModel):
    """Every worker lease the database holds, newest beat first."""

    now: float = Field(description="The clock the leases are judged by, in epoch seconds.")
    data: list[LeasePublic]
    count: int


class VerifiedEventPublic(BaseModel):
    """The event a violation is about."""

    type: str
    position: int
    stream: str
    version: int


class ViolationPublic(BaseModel):
    """One broken rule, in words."""

    rule: str
    message: str
    event: VerifiedEventPublic | None
    text: str = Field(description="The line `harness audit verify` prints for it.")


class VerifyPublic(BaseModel):
    """The report of `harness audit verify --db` (its ``--json``), and a one-line summary."""

    source: str
    summary: str
    clean: bool
    events: int
    streams: int
    runs: int
    finished: int
    running: int
    unfinished: int
    checkpointed: int
    checks: list[str]
    by_rule: dict[str, int]
    violations: list[ViolationPublic]


class ToolPublic(BaseModel):
    """One tool: where it comes from, what its server says of it, and whether runs may use it."""

    name: str = Field(description="The name the model calls it by.")
    origin: str = Field(description="builtin, plugin:NAME or mcp:SERVER.")
    description: str
    annotations: dict[str, Any] = Field(
        description="An MCP tool's annotations as its server lists them (readOnlyHint, …); {} else."
    )
    admitted: bool = Field(description="Offered to the model and callable (refused: never).")
    admitted_by: AdmittedBy | None = Field(
        description="read-only: its own word; allow_not_read_only: the configuration's."
    )
    refusal: Refusal | None = Field(description="Why it is refused (null when admitted).")
    reason: str = Field(description="What the tool or its server says, in the harness's words.")
    remedy: str = Field(description="The setting that would admit a refused tool, if one would.")
    input_schema: dict[str, Any] = Field(description="The JSON schema of its arguments.")

    @classmethod
    def of(cls, view: ToolView) -> ToolPublic:
        """The public form of a tool's view."""
        admission = view.admission
        return cls(
            name=view.name,
            origin=view.origin,
            description=view.description,
            annotations=view.annotations,
            admitted=admission.admitted,
            admitted_by=admission.by,
            refusal=admission.refusal,
            reason=admission.why,
            remedy=admission.remedy,
            input_schema=dict(view.input_schema),
        )


class ToolsPublic(BaseModel):
    """Every tool this worker was configured with, refused ones included, in the order offered."""

    data: list[ToolPublic]
    count: int


class CapabilityPublic(BaseModel):
    """One capability of the model provider, probed: whether it passed and what was seen."""

    name: str
    passed: bool
    detail: str


class ModelCheckPublic(BaseModel):
    """The configured model provider, probed (``checked`` false: an in-process model)."""

    model: str
    checked: bool
    passed: bool
    data: list[CapabilityPublic]
    count: int


class ProjectionPublic(BaseModel):
    """Where one projection stands against the log."""

    name: str
    position: int
    head: int
    lag: int


class ProjectionsPublic(BaseModel):
    """Every projection's position, the log's head and the lag."""

    head: int
    data: list[ProjectionPublic]


class RebuildPublic(BaseModel):
    """A finished rebuild."""

    names: list[str]
    entries: int = Field(description="Log entries applied.")


class AuditEventPublic(BaseModel):
    """One domain event of the log, as stored (the same record as `harness audit export`)."""

    position: int = Field(description="Its log position (global, ordered).")
    stream: UUID = Field(description="The aggregate it belongs to (run, tool invocation, …).")
    version: int = Field(description="Its version in the stream, from 1.")
    type: str = Field(description="The trace type, e.g. RUN_STARTED.")
    topic: str = Field(description="The event class's topic in the store.")
    timestamp: str | None = Field(description="When it was recorded (ISO 8601).")
    payload: dict[str, Any] = Field(description="Its state as stored (transcoded JSON).")
    hash: str | None = Field(description="Its chain link over the stream (see the Audit section).")


class AuditEventsPublic(BaseModel):
    """A page of the log; ask for the next with ``after=next_after``."""

    data: list[AuditEventPublic]
    count: int = Field(description="Events in this page.")
    next_after: int = Field(description="The position to continue after (this page's last).")
    head: int = Field(description="The log's last position when the page was read.")


class HealthPublic(BaseModel):
    """Liveness: the process answers."""

    status: str


class ReadinessPublic(BaseModel):
    """Readiness: the event store answers, with its backend and last log position."""

    status: str
    backend: str
    head: int
