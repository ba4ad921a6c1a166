"""The release rules and the outcome table of SPEC §10 as data.

The Run aggregate consults :func:`release_refusal` before it records a ``RELEASE_DECISION``, so a
decision that skips a guard, or a fallback type that the guard results do not support, can never be
recorded (SPEC §16 invariants 7, 8 and 9). :data:`OUTCOME_TABLE` and :func:`final_outcome` say
where a finished run lands: ``Run.finish`` records :func:`final_outcome`, and the audit
(``application/audit/invariants.py``) holds every finished run to both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from domain.guard_stages import guard_step_refusal
from domain.release_states import FallbackType, GuardStage, ReleaseOutcome, SemanticVerdict
from domain.states import DbStatus, Intent, RunState


@dataclass(frozen=True)
class GuardProgress:
    """What the run's guard events have established so far."""

    stage: GuardStage = GuardStage.NONE
    has_conclusion: bool = False
    evidence_valid: bool = False
    verdict: SemanticVerdict | None = None
    semantic_unavailable: bool = False
    verified_facts: int = 0


_BUDGET_ONLY = "after budget exhaustion only an INSUFFICIENT_EVIDENCE fallback may be released"


def release_refusal(
    intent: Intent | None,
    guards: GuardProgress,
    outcome: ReleaseOutcome,
    fallback_type: FallbackType | None,
    *,
    budget_exhausted: bool = False,
) -> str | None:
    """Why this release decision may not be recorded now, or None when it may.

    ``budget_exhausted`` is the one terminal state that may still publish: only an
    INSUFFICIENT_EVIDENCE fallback over verified progress, wherever the guard chain stopped.
    """
    if outcome not in PUBLISHED:
        return f"a release decides SUCCESS or FALLBACK, not {outcome.value}"
    if (outcome is ReleaseOutcome.FALLBACK) != (fallback_type is not None):
        return "a FALLBACK needs a fallback type and a SUCCESS must not have one"
    if guards.stage is GuardStage.DECIDED:
        return "the release was already decided"
    if intent is not Intent.DIAGNOSIS:
        if outcome is not ReleaseOutcome.SUCCESS or intent is None:
            return "only a routed SYSTEM_CHAT or KNOWLEDGE_QUERY answer is released without guards"
        if budget_exhausted:
            return _BUDGET_ONLY
        if guard_step_refusal(guards.stage, GuardStage.DECIDED, intent) is not None:
            return "a knowledge answer the judge was asked about is released after its decision"
        return None
    if guard_step_refusal(guards.stage, GuardStage.DECIDED) is not None:
        return "a diagnosis is released only after the evidence guard has run"
    if budget_exhausted and fallback_type is not FallbackType.INSUFFICIENT_EVIDENCE:
        return _BUDGET_ONLY
    return _diagnosis_refusal(guards, fallback_type, budget_exhausted)


def _diagnosis_refusal(
    guards: GuardProgress, fallback_type: FallbackType | None, budget_exhausted: bool
) -> str | None:
    decided = guards.stage is GuardStage.SEMANTIC_DECIDED
    without_conclusion = guards.stage is GuardStage.EVIDENCE_CHECKED and not guards.has_conclusion
    match fallback_type:
        case None:
            ok = decided and guards.verdict is SemanticVerdict.SUPPORTED
            need = "a SUPPORTED semantic verdict"
        case FallbackType.SEMANTIC_UNSUPPORTED:
            ok = decided and guards.verdict is SemanticVerdict.UNSUPPORTED
            need = "an UNSUPPORTED semantic verdict"
        case FallbackType.SEMANTIC_UNAVAILABLE:
            ok = decided and guards.semantic_unavailable
            need = "an unavailable semantic guard"
        case FallbackType.EVIDENCE_VALIDATION_FAILED:
            ok = guards.stage is GuardStage.RECHECKED and not guards.evidence_valid
            need = "a failed evidence recheck after the one repair"
        case FallbackType.MISSING_REQUIRED_CONTEXT:
            ok = without_conclusion and guards.verified_facts == 0
            need = "a draft without conclusion and without verified progress"
        case FallbackType.INSUFFICIENT_EVIDENCE:
            ok = (without_conclusion or budget_exhausted) and guards.verified_facts > 0
            need = "verified progress, without a conclusion or after budget exhaustion"
        case _:
            assert_never(fallback_type)
    name = fallback_type.value if fallback_type else "SUCCESS"
    return None if ok else f"{name} requires {need}"


PUBLISHED: frozenset[ReleaseOutcome] = frozenset({ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK})
"""The outcomes that publish content: the only ones a release decision may record."""

_FB = FallbackType
OUTCOME_TABLE: frozenset[tuple[RunState, ReleaseOutcome, FallbackType | None]] = frozenset(
    {
        (RunState.SUCCESS, ReleaseOutcome.SUCCESS, None),
        *(
            (RunState.SUCCESS, ReleaseOutcome.FALLBACK, fallback)
            for fallback in (
                _FB.MISSING_REQUIRED_CONTEXT,
                _FB.INSUFFICIENT_EVIDENCE,
                _FB.EVIDENCE_VALIDATION_FAILED,
                _FB.SEMANTIC_UNSUPPORTED,
                _FB.SEMANTIC_UNAVAILABLE,
            )
        ),
        (RunState.BUDGET_EXHAUSTED, ReleaseOutcome.FALLBACK, _FB.INSUFFICIENT_EVIDENCE),
        (RunState.TIMED_OUT, ReleaseOutcome.FAILED, None),
        (RunState.BUDGET_EXHAUSTED, ReleaseOutcome.FAILED, None),
        (RunState.FAILED, ReleaseOutcome.FAILED, None),
        (RunState.CANCELLED, ReleaseOutcome.CANCELLED, None),
    }
)
"""SPEC §10: every legal (RunState, ReleaseOutcome, FallbackType) of a finished run.

The fallback type is None unless the outcome is FALLBACK."""

_BUDGET_FALLBACK = (ReleaseOutcome.FALLBACK, FallbackType.INSUFFICIENT_EVIDENCE)


def is_legal_row(state: RunState, outcome: ReleaseOutcome, fallback: FallbackType | None) -> bool:
    """Whether a finished run's state, outcome and published fallback type are a row of §10."""
    return (state, outcome, fallback) in OUTCOME_TABLE


def final_outcome(
    state: RunState, release: tuple[ReleaseOutcome, FallbackType | None] | None
) -> ReleaseOutcome:
    """The ReleaseOutcome SPEC §3 and §10 give a run that ended ``state`` after ``release``.

    SUCCESS publishes what Release decided; only the budget fallback keeps BUDGET_EXHAUSTED;
    CANCELLED is its own outcome; every other ending is FAILED, whatever was decided before it.
    ``RUN_FINISHED`` records this (``Run.finish``) and the audit holds every finished run to it.
    """
    if state is RunState.CANCELLED:
        return ReleaseOutcome.CANCELLED
    if state is RunState.SUCCESS and release is not None:
        return release[0]
    if state is RunState.BUDGET_EXHAUSTED and release == _BUDGET_FALLBACK:
        return ReleaseOutcome.FALLBACK
    return ReleaseOutcome.FAILED


DB_STATUS: dict[ReleaseOutcome, DbStatus] = {
    ReleaseOutcome.SUCCESS: DbStatus.SUCCESS,
    ReleaseOutcome.FALLBACK: DbStatus.SUCCESS,
    ReleaseOutcome.FAILED: DbStatus.FAILED,
    ReleaseOutcome.CANCELLED: DbStatus.CANCELLED,
}
"""SPEC §12: a finished run's database status by its ReleaseOutcome. SUCCESS means "handled with
safe content", not "has a conclusion"; a run still RUNNING has no outcome yet."""
