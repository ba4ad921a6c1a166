"""Response bodies of ``/v1/evals``: recorded evaluations and their cases."""

from __future__ import annotations

from datetime import datetime  # noqa: TC003 (pydantic reads it)
from typing import Literal

from pydantic import BaseModel, Field


class EvalRunPublic(BaseModel):
    """One recorded evaluation (an ``eval_run`` row): what ran, against what, and its totals."""

    eval_id: str
    suite: str
    model: str
    settings: dict[str, str] = Field(
        description="What shaped the answers (model, provider, timeouts, budgets, tools)."
    )
    started_at: datetime
    finished_at: datetime | None = Field(description="None while it is being recorded.")
    cases: int = Field(description="The cases the evaluation ran.")
    scored: int = Field(description="The cases recorded so far (all of them once finished).")
    correct: int
    fallback: int = Field(description="A safe fallback where an answer was expected.")
    wrong: int
    published_wrong: int = Field(description="Wrong answers that were published: the worst kind.")
    tokens: int
    model_calls: int
    latency_ms: int


class EvalsPublic(BaseModel):
    """Recorded evaluations, newest first."""

    data: list[EvalRunPublic]
    count: int = Field(description="How many match in all (this page may hold fewer).")
    limit: int
    offset: int


class EvalCasePublic(BaseModel):
    """One case of an evaluation, as it was run and scored."""

    case_id: str
    question: str
    verdict: Literal["correct", "fallback", "wrong"]
    published_wrong: bool
    reasons: list[str] = Field(description="What decided the verdict, one short line each.")
    run_id: str | None = Field(description="The case's run, in the evaluation's own store.")
    state: str
    release: str | None
    fallback_type: str | None
    tokens: int
    model_calls: int
    latency_ms: int


class EvalPublic(EvalRunPublic):
    """One evaluation with every case, in the order they were scored."""

    data: list[EvalCasePublic]
