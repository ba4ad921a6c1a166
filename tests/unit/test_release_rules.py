"""The release rules of SPEC §10 as a table: every FallbackType and SUCCESS, allowed and refused.

``release_refusal`` is pure: given what the guard events established (including how many
ProgressSnapshot facts were verified) and whether the run's budget is exhausted, it says why a
release decision may not be recorded, or None when it may.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from domain.release import GuardProgress, release_refusal
from domain.release_states import FallbackType, GuardStage, ReleaseOutcome, SemanticVerdict
from domain.states import Intent

Decision = FallbackType | None
"""A release decision: None is SUCCESS, a fallback type is a FALLBACK of that type."""

CHECKED = GuardStage.EVIDENCE_CHECKED
DECIDED_STAGE = GuardStage.SEMANTIC_DECIDED
VERIFIED = 2
"""A positive count of verified ProgressSnapshot facts."""

GUARDS: dict[str, GuardProgress] = {
    "nothing-checked": GuardProgress(),
    "no-conclusion-valid-references": GuardProgress(
        CHECKED, has_conclusion=False, evidence_valid=True
    ),
    "no-conclusion-invalid-references": GuardProgress(
        CHECKED, has_conclusion=False, evidence_valid=False
    ),
    "conclusion-valid": GuardProgress(CHECKED, has_conclusion=True, evidence_valid=True),
    "conclusion-invalid": GuardProgress(CHECKED, has_conclusion=True, evidence_valid=False),
    "repaired": GuardProgress(GuardStage.REPAIRED, has_conclusion=True, evidence_valid=False),
    "recheck-failed": GuardProgress(
        GuardStage.RECHECKED, has_conclusion=True, evidence_valid=False
    ),
    "recheck-passed": GuardProgress(GuardStage.RECHECKED, has_conclusion=True, evidence_valid=True),
    "semantic-pending": GuardProgress(
        GuardStage.SEMANTIC_ATTEMPTED, has_conclusion=True, evidence_valid=True
    ),
    "supported": GuardProgress(
        DECIDED_STAGE, has_conclusion=True, evidence_valid=True, verdict=SemanticVerdict.SUPPORTED
    ),
    "unsupported": GuardProgress(
        DECIDED_STAGE, has_conclusion=True, evidence_valid=True, verdict=SemanticVerdict.UNSUPPORTED
    ),
    "unavailable": GuardProgress(
        DECIDED_STAGE, has_conclusion=True, evidence_valid=True, semantic_unavailable=True
    ),
    "released": GuardProgress(
        GuardStage.DECIDED,
        has_conclusion=True,
        evidence_valid=True,
        verdict=SemanticVerdict.SUPPORTED,
    ),
}
"""Guard results without verified facts; :func:`guards_of` adds them."""

WITHOUT_CONCLUSION = {"no-conclusion-valid-references", "no-conclusion-invalid-references"}
AFTER_EVIDENCE_CHECK = set(GUARDS) - {"nothing-checked", "released"}
WITH_CONCLUSION = AFTER_EVIDENCE_CHECK - WITHOUT_CONCLUSION

DECISIONS: list[Decision] = [None, *FallbackType]

GUARD_DECIDED: dict[Decision, set[str]] = {
    None: {"supported"},
    FallbackType.SEMANTIC_UNSUPPORTED: {"unsupported"},
    FallbackType.SEMANTIC_UNAVAILABLE: {"unavailable"},
    FallbackType.EVIDENCE_VALIDATION_FAILED: {"recheck-failed"},
}
"""Decisions that only the guard chain decides; verified facts do not matter to them."""


def allowed(decision: Decision, *, verified: bool, budget_exhausted: bool) -> set[str]:
    """For a DIAGNOSIS: the guard results under which ``decision`` may be recorded (SPEC §10)."""
    if decision is FallbackType.INSUFFICIENT_EVIDENCE:
        if not verified:
            return set()
        return AFTER_EVIDENCE_CHECK if budget_exhausted else WITHOUT_CONCLUSION
    if budget_exhausted:
        return set()
    if decision is FallbackType.MISSING_REQUIRED_CONTEXT:
        return set() if verified else WITHOUT_CONCLUSION
    return GUARD_DECIDED[decision]


def guards_of(name: str, *, verified: bool) -> GuardProgress:
    return replace(GUARDS[name], verified_facts=VERIFIED if verified else 0)


def outcome_of(decision: Decision) -> ReleaseOutcome:
    return ReleaseOutcome.SUCCESS if decision is None else ReleaseOutcome.FALLBACK


def name_of(decision: Decision) -> str:
    return "SUCCESS" if decision is None else decision.value


def test_the_table_names_every_decision() -> None:
    assert set(GUARD_DECIDED) | {
        FallbackType.INSUFFICIENT_EVIDENCE,
        FallbackType.MISSING_REQUIRED_CONTEXT,
    } == set(DECISIONS)


CASES = [
    (decision, guards, verified, budget)
    for decision in DECISIONS
    for guards in GUARDS
    for verified in (False, True)
    for budget in (False, True)
]
ALLOWED_CASES = [
    case
    for case in CASES
    if case[1] in allowed(case[0], verified=case[2], budget_exhausted=case[3])
]


def case_id(decision: Decision, guards: str, verified: bool, budget: bool) -> str:
    facts = "verified" if verified else "unverified"
    window = "budget-exhausted" if budget else "running"
    return f"{name_of(decision)}-after-{guards}-{facts}-{window}"


@pytest.mark.parametrize(
    ("decision", "guards", "verified", "budget"),
    CASES,
    ids=[case_id(*case) for case in CASES],
)
def test_a_diagnosis_release_is_allowed_exactly_when_the_guards_support_it(
    decision: Decision, guards: str, verified: bool, budget: bool
) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS,
        guards_of(guards, verified=verified),
        outcome_of(decision),
        decision,
        budget_exhausted=budget,
    )

    if (decision, guards, verified, budget) in ALLOWED_CASES:
        assert refusal is None
    else:
        assert isinstance(refusal, str) and refusal


def test_the_budget_window_allows_only_insufficient_evidence_over_verified_progress() -> None:
    in_budget_window = {
        (decision, guards, verified)
        for decision, guards, verified, budget in ALLOWED_CASES
        if budget
    }

    assert in_budget_window == {
        (FallbackType.INSUFFICIENT_EVIDENCE, guards, True) for guards in AFTER_EVIDENCE_CHECK
    }


@pytest.mark.parametrize("budget", [False, True], ids=["running", "budget-exhausted"])
@pytest.mark.parametrize("verified", [False, True], ids=["unverified", "verified"])
@pytest.mark.parametrize("decision", DECISIONS, ids=name_of)
def test_a_diagnosis_release_waits_for_the_evidence_guard(
    decision: Decision, verified: bool, budget: bool
) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS,
        guards_of("nothing-checked", verified=verified),
        outcome_of(decision),
        decision,
        budget_exhausted=budget,
    )

    assert refusal == "a diagnosis is released only after the evidence guard has run"


@pytest.mark.parametrize("budget", [False, True], ids=["running", "budget-exhausted"])
@pytest.mark.parametrize("intent", [*Intent, None], ids=lambda i: i.value if i else "unrouted")
@pytest.mark.parametrize("decision", DECISIONS, ids=name_of)
def test_a_release_is_decided_only_once(
    decision: Decision, intent: Intent | None, budget: bool
) -> None:
    refusal = release_refusal(
        intent,
        guards_of("released", verified=True),
        outcome_of(decision),
        decision,
        budget_exhausted=budget,
    )

    assert refusal == "the release was already decided"


IE_NEEDS = (
    "INSUFFICIENT_EVIDENCE requires verified progress, "
    "without a conclusion or after budget exhaustion"
)
MRC_NEEDS = (
    "MISSING_REQUIRED_CONTEXT requires a draft without conclusion and without verified progress"
)


@pytest.mark.parametrize(
    ("decision", "guards", "need"),
    [
        (None, "unsupported", "SUCCESS requires a SUPPORTED semantic verdict"),
        (
            FallbackType.SEMANTIC_UNSUPPORTED,
            "supported",
            "SEMANTIC_UNSUPPORTED requires an UNSUPPORTED semantic verdict",
        ),
        (
            FallbackType.SEMANTIC_UNAVAILABLE,
            "semantic-pending",
            "SEMANTIC_UNAVAILABLE requires an unavailable semantic guard",
        ),
        (
            FallbackType.EVIDENCE_VALIDATION_FAILED,
            "conclusion-invalid",
            "EVIDENCE_VALIDATION_FAILED requires a failed evidence recheck after the one repair",
        ),
        (FallbackType.MISSING_REQUIRED_CONTEXT, "conclusion-invalid", MRC_NEEDS),
    ],
    ids=["SUCCESS", "SEMANTIC_UNSUPPORTED", "SEMANTIC_UNAVAILABLE", "EVF", "MISSING_CONTEXT"],
)
def test_a_refusal_says_what_the_decision_needs(decision: Decision, guards: str, need: str) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS, guards_of(guards, verified=False), outcome_of(decision), decision
    )

    assert refusal == need


# -- verified progress decides between the two progress fallbacks ---------------------------------


@pytest.mark.parametrize("budget", [False, True], ids=["running", "budget-exhausted"])
@pytest.mark.parametrize("guards", sorted(AFTER_EVIDENCE_CHECK))
def test_insufficient_evidence_without_verified_facts_is_refused(guards: str, budget: bool) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS,
        guards_of(guards, verified=False),
        ReleaseOutcome.FALLBACK,
        FallbackType.INSUFFICIENT_EVIDENCE,
        budget_exhausted=budget,
    )

    assert refusal == IE_NEEDS


@pytest.mark.parametrize("guards", sorted(WITHOUT_CONCLUSION))
def test_insufficient_evidence_without_a_conclusion_needs_verified_facts(guards: str) -> None:
    progress = guards_of(guards, verified=True)

    assert progress.verified_facts > 0
    assert (
        release_refusal(
            Intent.DIAGNOSIS, progress, ReleaseOutcome.FALLBACK, FallbackType.INSUFFICIENT_EVIDENCE
        )
        is None
    )


@pytest.mark.parametrize("verified_facts", [1, 7])
def test_any_positive_count_of_verified_facts_is_progress(verified_facts: int) -> None:
    progress = replace(GUARDS["no-conclusion-valid-references"], verified_facts=verified_facts)

    assert (
        release_refusal(
            Intent.DIAGNOSIS, progress, ReleaseOutcome.FALLBACK, FallbackType.INSUFFICIENT_EVIDENCE
        )
        is None
    )
    assert (
        release_refusal(
            Intent.DIAGNOSIS,
            progress,
            ReleaseOutcome.FALLBACK,
            FallbackType.MISSING_REQUIRED_CONTEXT,
        )
        == MRC_NEEDS
    )


@pytest.mark.parametrize("guards", sorted(WITH_CONCLUSION))
def test_insufficient_evidence_after_a_conclusion_is_refused_while_running(guards: str) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS,
        guards_of(guards, verified=True),
        ReleaseOutcome.FALLBACK,
        FallbackType.INSUFFICIENT_EVIDENCE,
    )

    assert refusal == IE_NEEDS


@pytest.mark.parametrize("guards", sorted(AFTER_EVIDENCE_CHECK))
def test_insufficient_evidence_over_verified_facts_is_allowed_after_budget_exhaustion(
    guards: str,
) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS,
        guards_of(guards, verified=True),
        ReleaseOutcome.FALLBACK,
        FallbackType.INSUFFICIENT_EVIDENCE,
        budget_exhausted=True,
    )

    assert refusal is None


@pytest.mark.parametrize("guards", sorted(WITHOUT_CONCLUSION))
def test_missing_required_context_with_verified_facts_is_refused(guards: str) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS,
        guards_of(guards, verified=True),
        ReleaseOutcome.FALLBACK,
        FallbackType.MISSING_REQUIRED_CONTEXT,
    )

    assert refusal == MRC_NEEDS


@pytest.mark.parametrize("guards", sorted(WITH_CONCLUSION))
def test_missing_required_context_after_a_conclusion_is_refused(guards: str) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS,
        guards_of(guards, verified=False),
        ReleaseOutcome.FALLBACK,
        FallbackType.MISSING_REQUIRED_CONTEXT,
    )

    assert refusal == MRC_NEEDS


# -- the budget window ---------------------------------------------------------------------------

BUDGET_ONLY = "after budget exhaustion only an INSUFFICIENT_EVIDENCE fallback may be released"
NOT_INSUFFICIENT = [d for d in DECISIONS if d is not FallbackType.INSUFFICIENT_EVIDENCE]


@pytest.mark.parametrize("verified", [False, True], ids=["unverified", "verified"])
@pytest.mark.parametrize("guards", sorted(AFTER_EVIDENCE_CHECK))
@pytest.mark.parametrize("decision", NOT_INSUFFICIENT, ids=name_of)
def test_after_budget_exhaustion_any_other_diagnosis_release_is_refused(
    decision: Decision, guards: str, verified: bool
) -> None:
    refusal = release_refusal(
        Intent.DIAGNOSIS,
        guards_of(guards, verified=verified),
        outcome_of(decision),
        decision,
        budget_exhausted=True,
    )

    assert refusal == BUDGET_ONLY


@pytest.mark.parametrize("decision", NOT_INSUFFICIENT, ids=name_of)
def test_the_budget_refusal_wins_over_what_the_guards_would_allow(decision: Decision) -> None:
    guards = sorted(allowed(decision, verified=False, budget_exhausted=False))[0]
    progress = guards_of(guards, verified=False)

    running = release_refusal(Intent.DIAGNOSIS, progress, outcome_of(decision), decision)
    exhausted = release_refusal(
        Intent.DIAGNOSIS, progress, outcome_of(decision), decision, budget_exhausted=True
    )

    assert running is None
    assert exhausted == BUDGET_ONLY


@pytest.mark.parametrize(
    "intent", [Intent.SYSTEM_CHAT, Intent.KNOWLEDGE_QUERY], ids=lambda i: i.value
)
def test_a_routed_answer_is_refused_after_budget_exhaustion(intent: Intent) -> None:
    """Only the budget fallback may publish once the budget ran out (SPEC §3, §10)."""
    refusal = release_refusal(
        intent, GuardProgress(), ReleaseOutcome.SUCCESS, None, budget_exhausted=True
    )

    assert refusal == BUDGET_ONLY


@pytest.mark.parametrize("fallback", list(FallbackType), ids=lambda f: f.value)
@pytest.mark.parametrize(
    "intent",
    [Intent.SYSTEM_CHAT, Intent.KNOWLEDGE_QUERY, None],
    ids=lambda i: i.value if i else "unrouted",
)
def test_an_answer_fallback_after_budget_exhaustion_names_the_intent_rule(
    intent: Intent | None, fallback: FallbackType
) -> None:
    refusal = release_refusal(
        intent, GuardProgress(), ReleaseOutcome.FALLBACK, fallback, budget_exhausted=True
    )

    assert refusal == (
        "only a routed SYSTEM_CHAT or KNOWLEDGE_QUERY answer is released without guards"
    )


# -- answers without guards ----------------------------------------------------------------------

ANSWER_INTENTS = [Intent.SYSTEM_CHAT, Intent.KNOWLEDGE_QUERY]


@pytest.mark.parametrize("intent", ANSWER_INTENTS, ids=lambda i: i.value)
def test_a_routed_answer_is_released_as_success_without_guards(intent: Intent) -> None:
    assert release_refusal(intent, GuardProgress(), ReleaseOutcome.SUCCESS, None) is None


@pytest.mark.parametrize("fallback", list(FallbackType), ids=lambda f: f.value)
@pytest.mark.parametrize(
    "intent", [*ANSWER_INTENTS, None], ids=lambda i: i.value if i else "unrouted"
)
def test_an_answer_is_never_released_as_a_fallback(
    intent: Intent | None, fallback: FallbackType
) -> None:
    refusal = release_refusal(
        intent, replace(GuardProgress(), verified_facts=VERIFIED), ReleaseOutcome.FALLBACK, fallback
    )

    assert refusal == (
        "only a routed SYSTEM_CHAT or KNOWLEDGE_QUERY answer is released without guards"
    )


@pytest.mark.parametrize("budget", [False, True], ids=["running", "budget-exhausted"])
def test_an_unrouted_run_releases_nothing(budget: bool) -> None:
    refusal = release_refusal(
        None, GuardProgress(), ReleaseOutcome.SUCCESS, None, budget_exhausted=budget
    )

    assert refusal == (
        "only a routed SYSTEM_CHAT or KNOWLEDGE_QUERY answer is released without guards"
    )


# -- the shape of the decision -------------------------------------------------------------------


@pytest.mark.parametrize("budget", [False, True], ids=["running", "budget-exhausted"])
@pytest.mark.parametrize("fallback", [None, *FallbackType], ids=name_of)
@pytest.mark.parametrize("outcome", [ReleaseOutcome.FAILED, ReleaseOutcome.CANCELLED])
@pytest.mark.parametrize("intent", [*Intent, None], ids=lambda i: i.value if i else "unrouted")
def test_a_release_decides_success_or_fallback_only(
    intent: Intent | None, outcome: ReleaseOutcome, fallback: FallbackType | None, budget: bool
) -> None:
    refusal = release_refusal(
        intent, GUARDS["supported"], outcome, fallback, budget_exhausted=budget
    )

    assert refusal == f"a release decides SUCCESS or FALLBACK, not {outcome.value}"


@pytest.mark.parametrize("budget", [False, True], ids=["running", "budget-exhausted"])
@pytest.mark.parametrize("intent", [*Intent, None], ids=lambda i: i.value if i else "unrouted")
def test_a_fallback_needs_a_type(intent: Intent | None, budget: bool) -> None:
    refusal = release_refusal(
        intent, GUARDS["supported"], ReleaseOutcome.FALLBACK, None, budget_exhausted=budget
    )

    assert refusal == "a FALLBACK needs a fallback type and a SUCCESS must not have one"


@pytest.mark.parametrize("budget", [False, True], ids=["running", "budget-exhausted"])
@pytest.mark.parametrize("fallback", list(FallbackType), ids=lambda f: f.value)
@pytest.mark.parametrize("intent", [*Intent, None], ids=lambda i: i.value if i else "unrouted")
def test_a_success_has_no_fallback_type(
    intent: Intent | None, fallback: FallbackType, budget: bool
) -> None:
    refusal = release_refusal(
        intent, GUARDS["supported"], ReleaseOutcome.SUCCESS, fallback, budget_exhausted=budget
    )

    assert refusal == "a FALLBACK needs a fallback type and a SUCCESS must not have one"
