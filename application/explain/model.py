"""What an explanation is made of: the SPEC §15 questions and the pydantic models of the answers."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict

FieldValue = str | int | bool | None | list[str]

QUESTIONS: dict[str, str] = {
    "why_fallback": "why did the user get a fallback",
    "why_stopped_calling_tools": "why did the agent stop calling tools",
    "why_no_evidence": "why did a tool give no evidence",
    "timed_out_or_budget_exhausted": "timed out or budget exhausted",
    "success_without_conclusion": "status=SUCCESS but no conclusion",
    "why_no_done": "why no SSE `done`",
    "why_no_previous_turn": "why no previous-turn context next time",
}
"""The SPEC §15 questions in the table's order: machine key → the SPEC's wording."""


class EventRef(BaseModel):
    """One event an answer rests on, named by its stream and version (not by log position)."""

    model_config = ConfigDict(frozen=True)

    stream_id: UUID
    stream_version: int
    event_type: str
    timestamp: datetime


class Answer(BaseModel):
    """One SPEC §15 question answered for one run, with the values and events it rests on."""

    question: str
    asked: str
    applies: bool
    answer: str
    fields: dict[str, FieldValue]
    evidence: list[EventRef]


class BudgetUse(BaseModel):
    """One hard budget: how much of its limit the run used."""

    kind: str
    used: int
    limit: int


class ReplaySummary(BaseModel):
    """One what-if re-release of the run (``harness audit replay``), as its stream records it."""

    number: int
    replayed_at: datetime
    changes: dict[str, str]
    """What the replay changed (excerpt rules, judge); empty: replayed as recorded."""
    original_outcome: str
    original_fallback_type: str | None
    outcome: str
    """What the replay decided: SUCCESS, FALLBACK or NONE (nothing released)."""
    fallback_type: str | None
    differences: list[str]
    """What it decided otherwise, one line each (empty: the same decision)."""


class RunExplanation(BaseModel):
    """A run's identity and outcome, and every SPEC §15 question answered from its log."""

    run_id: UUID
    session_id: str
    query: str
    intent: str | None
    finished: bool
    release_outcome: str | None
    fallback_type: str | None
    termination_state: str | None
    termination_reason: str | None
    failure_cause: str | None
    """What failed, as recorded with the termination (exception type and message, secrets
    redacted); None when no cause was recorded."""
    stop_reason: str | None
    duration_ms: int | None
    budget: list[BudgetUse]
    answers: list[Answer]
    replays: list[ReplaySummary] = []
    """Every what-if re-release of the run, oldest first (its own stream; the run is unchanged)."""
    model_retries: list[str] = []
    """Each model call's attempt that failed and was retried (a 429, a 5xx, a reset, a
    timeout), in the harness's words: the model step records each with its wait."""
