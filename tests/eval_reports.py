"""Evaluation reports built by hand, as ``harness eval`` hands them to ``record_eval``.

``BEFORE`` and ``AFTER`` are two evaluations of the same suite: between them the model changed,
one case went from correct to published-and-wrong, one from fallback to correct, one case was
dropped and one added, and one stayed as it was.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from domain.evals import CaseResult, EvalReport, Verdict

AT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
BEFORE_ID = UUID("0b1e7a55-0000-4000-8000-000000000001")
AFTER_ID = UUID("a17e4000-0000-4000-8000-000000000002")


def case(
    case_id: str,
    verdict: Verdict,
    *,
    published_wrong: bool = False,
    reasons: tuple[str, ...] = (),
    tokens: int = 120,
    question: str | None = None,
) -> CaseResult:
    """One case's result, its run a published SUCCESS unless it is a fallback."""
    fallback = verdict is Verdict.FALLBACK
    return CaseResult(
        case_id=case_id,
        question=question or f"Why was {case_id} slow on 2026-11-29?",
        verdict=verdict,
        published_wrong=published_wrong,
        reasons=reasons,
        run_id=f"run-of-{case_id}",
        state="SUCCESS",
        release="FALLBACK" if fallback else "SUCCESS",
        fallback_type="MISSING_REQUIRED_CONTEXT" if fallback else None,
        tokens=tokens,
        model_calls=3,
        latency_ms=250,
    )


def report(
    eval_id: UUID,
    model: str,
    results: tuple[CaseResult, ...],
    started: datetime = AT,
    **settings: str,
) -> EvalReport:
    """An evaluation of the shipped suite that took a minute."""
    shown = {"model": model, "provider": "offline", "deadline_s": "60", **settings}
    return EvalReport(
        eval_id, "suites/shipped", model, shown, started, started + timedelta(minutes=1), results
    )


BEFORE = report(
    BEFORE_ID,
    "offline",
    (
        case("checkout-deploy-why", Verdict.CORRECT),
        case("payments-yesterday", Verdict.FALLBACK),
        case("restart-runbook", Verdict.CORRECT),
        case("dropped-case", Verdict.CORRECT),
    ),
)
AFTER = report(
    AFTER_ID,
    "gpt-4o-mini",
    (
        case(
            "checkout-deploy-why",
            Verdict.WRONG,
            published_wrong=True,
            reasons=("missing: v2.14.0", "must not say: v2.13.4"),
        ),
        case("payments-yesterday", Verdict.CORRECT),
        case("restart-runbook", Verdict.CORRECT),
        case("added-case", Verdict.WRONG, reasons=("the run failed: nothing was published",)),
    ),
    started=AT + timedelta(hours=2),
    provider="openai",
)
