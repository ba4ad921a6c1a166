"""Response bodies of the operators' routes: daily totals, workers' leases, an audit report."""

from __future__ import annotations

from datetime import date  # noqa: TC003
from typing import Literal

from pydantic import BaseModel, Field


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
