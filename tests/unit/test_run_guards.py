"""The guard chain: the evidence check, its repair and recheck, the semantic guard.

Given/when/then over the Run aggregate: a run rebuilt from earlier events, one command, then
the exact new events, or a typed DomainError naming the run with nothing appended."""

from __future__ import annotations

import pytest

from domain.errors import (
    DomainError,
    IllegalTransitionError,
    InvalidCommandError,
    RunNotActiveError,
)
from domain.release_states import FallbackType, GuardStage, ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import CancellationReason, FailureCode
from tests.unit.gwt import then_events, then_refused
from tests.unit.run_steps import (
    PROGRESS_ONLY,
    RECHECK_FAILED,
    ROUTE_CHAT,
    ROUTE_DIAGNOSIS,
    ROUTE_ERROR,
    ROUTE_KNOWLEDGE,
    SUPPORTED,
    VERIFIED,
    Step,
    attempt,
    chain,
    checked,
    exhaust,
    given,
    recheck,
    released,
    repair,
    verdict,
)

# -- the guard chain -----------------------------------------------------------------------------


@pytest.mark.parametrize("verified_facts", [0, 1, 5])
@pytest.mark.parametrize(
    ("has_conclusion", "valid"),
    [(True, True), (True, False), (False, True), (False, False)],
)
def test_check_evidence_opens_the_guard_chain(
    has_conclusion: bool, valid: bool, verified_facts: int
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.check_evidence(has_conclusion, valid, ("inv-9",), verified_facts=verified_facts)

    assert then_events(run) == [
        (
            Run.EvidenceGuardInitial,
            {
                "has_conclusion": has_conclusion,
                "valid": valid,
                "invalid_references": ("inv-9",),
                "verified_facts": verified_facts,
                "rejected": (),
                "min_words": 3,
                "min_chars": 12,
            },
        )
    ]
    assert run.guards.stage is GuardStage.EVIDENCE_CHECKED
    assert (run.guards.has_conclusion, run.guards.evidence_valid) == (has_conclusion, valid)
    assert run.guards.verified_facts == verified_facts


def test_check_evidence_counts_no_verified_facts_by_default() -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.check_evidence(False, True)

    assert then_events(run) == [
        (
            Run.EvidenceGuardInitial,
            {
                "has_conclusion": False,
                "valid": True,
                "invalid_references": (),
                "verified_facts": 0,
                "rejected": (),
                "min_words": 3,
                "min_chars": 12,
            },
        )
    ]
    assert run.guards.verified_facts == 0


@pytest.mark.parametrize("has_conclusion", [True, False], ids=["conclusion", "no-conclusion"])
def test_check_evidence_refuses_a_negative_count_of_verified_facts(has_conclusion: bool) -> None:
    run = given(ROUTE_DIAGNOSIS)

    then_refused(
        run,
        InvalidCommandError,
        lambda r: r.check_evidence(has_conclusion, True, verified_facts=-1),
    )
    assert run.guards.stage is GuardStage.NONE


def test_verified_facts_are_kept_through_the_guard_chain() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, False, verified_facts=3), repair)

    run.recheck_evidence(True)

    assert [type(e) for e in run.collect_events()] == [Run.EvidenceGuardRecheck]
    assert run.guards.stage is GuardStage.RECHECKED
    assert run.guards.verified_facts == 3


def test_check_evidence_is_allowed_after_budget_exhaustion() -> None:
    run = given(ROUTE_DIAGNOSIS, exhaust)

    run.check_evidence(False, True, verified_facts=VERIFIED)

    assert [type(e) for e in run.collect_events()] == [Run.EvidenceGuardInitial]
    assert run.guards.verified_facts == VERIFIED


def test_repair_evidence_follows_an_invalid_conclusion() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, False))

    run.repair_evidence("dropped inv-9")

    assert then_events(run) == [(Run.EvidenceRepair, {"detail": "dropped inv-9"})]
    assert run.guards.stage is GuardStage.REPAIRED


@pytest.mark.parametrize("valid", [True, False])
def test_recheck_evidence_follows_the_repair(valid: bool) -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, False), repair)

    run.recheck_evidence(valid, () if valid else ("inv-9",))

    assert then_events(run) == [
        (
            Run.EvidenceGuardRecheck,
            {"valid": valid, "invalid_references": () if valid else ("inv-9",), "rejected": ()},
        )
    ]
    assert run.guards.stage is GuardStage.RECHECKED
    assert run.guards.evidence_valid is valid


def test_recheck_evidence_is_allowed_after_budget_exhaustion() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, False), repair, exhaust)

    run.recheck_evidence(True)

    assert [type(e) for e in run.collect_events()] == [Run.EvidenceGuardRecheck]


@pytest.mark.parametrize(
    "evidence",
    [checked(True, True), chain(checked(True, False), repair, recheck(True))],
    ids=["initially-valid", "valid-after-repair"],
)
def test_the_semantic_guard_runs_on_a_conclusion_with_valid_evidence(evidence: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, evidence)

    run.attempt_semantic_guard()

    assert then_events(run) == [(Run.SemanticGuardAttempt, {})]
    assert run.guards.stage is GuardStage.SEMANTIC_ATTEMPTED


@pytest.mark.parametrize(
    ("verdict_value", "unavailable"),
    [(SemanticVerdict.SUPPORTED, ""), (SemanticVerdict.UNSUPPORTED, ""), (None, "judge down")],
    ids=["supported", "unsupported", "unavailable"],
)
def test_decide_semantic_guard_records_the_verdict(
    verdict_value: SemanticVerdict | None, unavailable: str
) -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, True), attempt)

    run.decide_semantic_guard(verdict_value, unavailable)

    assert then_events(run) == [
        (
            Run.SemanticGuardDecision,
            {"verdict": verdict_value, "unavailable": unavailable, "judged": ()},
        )
    ]
    assert run.guards.stage is GuardStage.SEMANTIC_DECIDED
    assert run.guards.verdict is verdict_value
    assert run.guards.semantic_unavailable is (verdict_value is None)


def test_decide_semantic_guard_is_allowed_after_budget_exhaustion() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, True), attempt, exhaust)

    run.decide_semantic_guard(SemanticVerdict.SUPPORTED)

    assert [type(e) for e in run.collect_events()] == [Run.SemanticGuardDecision]


CHECK = checked(False, True)
GUARD_REFUSALS: list[tuple[str, list[Step], Step, type[DomainError]]] = [
    ("check-without-routing", [], CHECK, IllegalTransitionError),
    ("check-after-routing-error", [ROUTE_ERROR], CHECK, IllegalTransitionError),
    ("check-for-system-chat", [ROUTE_CHAT], CHECK, IllegalTransitionError),
    ("check-for-knowledge-query", [ROUTE_KNOWLEDGE], CHECK, IllegalTransitionError),
    ("check-twice", [ROUTE_DIAGNOSIS, CHECK], CHECK, IllegalTransitionError),
    (
        "check-after-release",
        [
            ROUTE_DIAGNOSIS,
            PROGRESS_ONLY,
            released(ReleaseOutcome.FALLBACK, FallbackType.INSUFFICIENT_EVIDENCE),
        ],
        CHECK,
        IllegalTransitionError,
    ),
    ("check-after-timeout", [ROUTE_DIAGNOSIS, lambda r: r.time_out()], CHECK, RunNotActiveError),
    ("repair-before-check", [ROUTE_DIAGNOSIS], repair, IllegalTransitionError),
    ("repair-for-system-chat", [ROUTE_CHAT], repair, IllegalTransitionError),
    (
        "repair-valid-evidence",
        [ROUTE_DIAGNOSIS, checked(True, True)],
        repair,
        IllegalTransitionError,
    ),
    (
        "repair-without-conclusion",
        [ROUTE_DIAGNOSIS, checked(False, False)],
        repair,
        IllegalTransitionError,
    ),
    (
        "second-repair",
        [ROUTE_DIAGNOSIS, checked(True, False), repair],
        repair,
        IllegalTransitionError,
    ),
    (
        "repair-after-budget-exhaustion",
        [ROUTE_DIAGNOSIS, checked(True, False), exhaust],
        repair,
        RunNotActiveError,
    ),
    (
        "recheck-before-repair",
        [ROUTE_DIAGNOSIS, checked(True, False)],
        recheck(True),
        IllegalTransitionError,
    ),
    (
        "recheck-twice",
        [ROUTE_DIAGNOSIS, checked(True, False), repair, recheck(False)],
        recheck(True),
        IllegalTransitionError,
    ),
    (
        "recheck-after-cancel",
        [
            ROUTE_DIAGNOSIS,
            checked(True, False),
            repair,
            lambda r: r.cancel(CancellationReason.USER_REQUESTED),
        ],
        recheck(True),
        RunNotActiveError,
    ),
    ("semantic-before-check", [ROUTE_DIAGNOSIS], attempt, IllegalTransitionError),
    ("semantic-for-knowledge-query", [ROUTE_KNOWLEDGE], attempt, IllegalTransitionError),
    (
        "semantic-without-conclusion",
        [ROUTE_DIAGNOSIS, checked(False, True)],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-with-invalid-evidence",
        [ROUTE_DIAGNOSIS, checked(True, False)],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-between-repair-and-recheck",
        [ROUTE_DIAGNOSIS, checked(True, False), repair],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-after-failed-recheck",
        [ROUTE_DIAGNOSIS, RECHECK_FAILED],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-twice",
        [ROUTE_DIAGNOSIS, checked(True, True), attempt],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-after-budget-exhaustion",
        [ROUTE_DIAGNOSIS, checked(True, True), exhaust],
        attempt,
        RunNotActiveError,
    ),
    (
        "verdict-before-attempt",
        [ROUTE_DIAGNOSIS, checked(True, True)],
        verdict(SemanticVerdict.SUPPORTED),
        IllegalTransitionError,
    ),
    (
        "verdict-twice",
        [ROUTE_DIAGNOSIS, SUPPORTED],
        verdict(SemanticVerdict.UNSUPPORTED),
        IllegalTransitionError,
    ),
    (
        "verdict-and-unavailable",
        [ROUTE_DIAGNOSIS, checked(True, True), attempt],
        verdict(SemanticVerdict.SUPPORTED, "judge down"),
        InvalidCommandError,
    ),
    (
        "neither-verdict-nor-unavailable",
        [ROUTE_DIAGNOSIS, checked(True, True), attempt],
        verdict(None, ""),
        InvalidCommandError,
    ),
    (
        "verdict-after-failure",
        [ROUTE_DIAGNOSIS, checked(True, True), attempt, lambda r: r.fail(FailureCode.MODEL_FAILED)],
        verdict(SemanticVerdict.SUPPORTED),
        RunNotActiveError,
    ),
]


@pytest.mark.parametrize(
    ("steps", "command", "error"),
    [(steps, command, error) for _, steps, command, error in GUARD_REFUSALS],
    ids=[name for name, *_ in GUARD_REFUSALS],
)
def test_a_guard_step_out_of_order_is_refused(
    steps: list[Step], command: Step, error: type[DomainError]
) -> None:
    run = given(*steps)

    then_refused(run, error, command)
