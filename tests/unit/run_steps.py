"""The given runs of the Run aggregate tests: a started run, the steps after it, the events.

Every ``tests/unit/test_run_*.py`` module builds its runs from these steps, so the run a test
starts from reads the same in all of them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from domain.release_states import FallbackType, ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import BudgetKind, CancellationReason, Intent, ModelStepPurpose, RunState
from domain.tool_states import DiagnosisStopReason
from domain.values import Budget
from tests.unit.gwt import Payloads, replay

RUN_ID = UUID("00000000-0000-4000-8000-000000000001")
DEADLINE = datetime(2030, 1, 1, tzinfo=UTC)
LIMITS = Budget(model_calls=3, tool_calls=2, tokens=100, bytes=1_000)
CONTENT: dict[str, Any] = {"summary": "safe content"}

Step = Callable[[Run], object]


# -- given / then helpers ------------------------------------------------------------------------


def given(*steps: Step, limits: Budget = LIMITS) -> Run:
    """A run rebuilt from the events of starting it and then taking ``steps``."""
    run = Run.start("session-1", "why is checkout slow?", DEADLINE, limits=limits, run_id=RUN_ID)
    for step in steps:
        step(run)
    return replay(Run, run.collect_events())


# -- steps used to build the given runs ----------------------------------------------------------


def routed(intent: Intent | None, error: str = "") -> Step:
    def step(run: Run) -> None:
        run.attempt_routing()
        run.decide_routing(intent, error)

    return step


ROUTE_DIAGNOSIS = routed(Intent.DIAGNOSIS)
ROUTE_CHAT = routed(Intent.SYSTEM_CHAT)
ROUTE_KNOWLEDGE = routed(Intent.KNOWLEDGE_QUERY)
ROUTE_ERROR = routed(None, "router unavailable")


def checked(has_conclusion: bool, valid: bool, verified_facts: int = 0) -> Step:
    return lambda run: run.check_evidence(has_conclusion, valid, verified_facts=verified_facts)


def chain(*steps: Step) -> Step:
    def step(run: Run) -> None:
        for each in steps:
            each(run)

    return step


def repair(run: Run) -> None:
    run.repair_evidence("dropped an unknown reference")


def recheck(valid: bool) -> Step:
    return lambda run: run.recheck_evidence(valid)


def attempt(run: Run) -> None:
    run.attempt_semantic_guard()


def verdict(value: SemanticVerdict | None, unavailable: str = "") -> Step:
    return lambda run: run.decide_semantic_guard(value, unavailable)


def released(outcome: ReleaseOutcome, fallback: FallbackType | None = None) -> Step:
    return lambda run: run.decide_release(outcome, fallback, CONTENT)


def exhaust(run: Run) -> None:
    run.exhaust_budget(BudgetKind.TOOL_CALLS)


def model_step(run: Run) -> None:
    run.record_model_step(ModelStepPurpose.AGENT, 1, 1, 1)


def complete(run: Run) -> None:
    run.complete()


def finish(run: Run) -> None:
    run.finish(run.created_on + timedelta(seconds=1))


VERIFIED = 2
"""A positive count of verified ProgressSnapshot facts."""

PROGRESS_ONLY = checked(has_conclusion=False, valid=True, verified_facts=VERIFIED)
"""A draft without conclusion (or a controlled stop) whose progress has verified facts."""
NOTHING_VERIFIED = checked(has_conclusion=False, valid=False)
"""A draft without conclusion (or a controlled stop) with no verified fact."""
VALID_REFERENCES_NOTHING_VERIFIED = checked(has_conclusion=False, valid=True)
"""References all resolve, but no fact's excerpt was verified: still no progress."""
SUPPORTED = chain(checked(True, True), attempt, verdict(SemanticVerdict.SUPPORTED))
REPAIRED_SUPPORTED = chain(
    checked(True, False), repair, recheck(True), attempt, verdict(SemanticVerdict.SUPPORTED)
)
UNSUPPORTED = chain(checked(True, True), attempt, verdict(SemanticVerdict.UNSUPPORTED))
UNAVAILABLE = chain(checked(True, True), attempt, verdict(None, "judge timed out"))
RECHECK_FAILED = chain(checked(True, False), repair, recheck(False))


def terminated_by(*, state: RunState, reason: Any) -> Payloads:
    return [(Run.RunTerminated, {"state": state, "reason": reason, "cause": ""})]


def cancellation(reason: CancellationReason) -> Payloads:
    return [(Run.CancellationRequested, {"reason": reason})]


def budget_exhausted(kind: BudgetKind, limit: int, used: int) -> Payloads:
    stop = DiagnosisStopReason.BUDGET_LIMIT_REACHED
    return [
        (Run.BudgetExhausted, {"kind": kind, "limit": limit, "used": used, "stop_reason": stop}),
        *terminated_by(state=RunState.BUDGET_EXHAUSTED, reason=CancellationReason.BUDGET_EXHAUSTED),
        *cancellation(CancellationReason.BUDGET_EXHAUSTED),
    ]


# -- release shorthands and the guard stages a release is decided after -----------------------

SUCCESS = ReleaseOutcome.SUCCESS
FALLBACK = ReleaseOutcome.FALLBACK
MRC = FallbackType.MISSING_REQUIRED_CONTEXT
IE = FallbackType.INSUFFICIENT_EVIDENCE
EVF = FallbackType.EVIDENCE_VALIDATION_FAILED
SEM_UNSUPPORTED = FallbackType.SEMANTIC_UNSUPPORTED
SEM_UNAVAILABLE = FallbackType.SEMANTIC_UNAVAILABLE

IE_NEEDS = (
    "INSUFFICIENT_EVIDENCE requires verified progress, "
    "without a conclusion or after budget exhaustion"
)
MRC_NEEDS = (
    "MISSING_REQUIRED_CONTEXT requires a draft without conclusion and without verified progress"
)
BUDGET_ONLY = "after budget exhaustion only an INSUFFICIENT_EVIDENCE fallback may be released"


def conclusion_stages(verified_facts: int) -> dict[str, Step]:
    """Every guard stage a conclusion can reach, over ``verified_facts`` verified progress facts."""
    valid = checked(True, True, verified_facts)
    invalid = checked(True, False, verified_facts)
    return {
        "valid-conclusion": valid,
        "invalid-conclusion": invalid,
        "repaired": chain(invalid, repair),
        "recheck-failed": chain(invalid, repair, recheck(False)),
        "recheck-passed": chain(invalid, repair, recheck(True)),
        "semantic-pending": chain(valid, attempt),
        "supported": chain(valid, attempt, verdict(SemanticVerdict.SUPPORTED)),
        "unsupported": chain(valid, attempt, verdict(SemanticVerdict.UNSUPPORTED)),
        "unavailable": chain(valid, attempt, verdict(None, "judge timed out")),
    }


WITH_PROGRESS: dict[str, Step] = {
    "progress": PROGRESS_ONLY,
    "progress-invalid-references": checked(False, False, VERIFIED),
    **{f"{name}-with-progress": step for name, step in conclusion_stages(VERIFIED).items()},
}
"""Every stage after the evidence check, with verified progress facts."""

WITHOUT_PROGRESS: dict[str, Step] = {
    "nothing-verified": NOTHING_VERIFIED,
    "valid-references-nothing-verified": VALID_REFERENCES_NOTHING_VERIFIED,
    **conclusion_stages(0),
}
"""Every stage after the evidence check, without any verified progress fact."""

CONCLUSIONS_WITH_PROGRESS = conclusion_stages(VERIFIED)
