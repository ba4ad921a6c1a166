"""The guard chain of SPEC §10 as data: the stages each guard event may follow.

Each guard event records one :class:`GuardStage`; :data:`GUARD_STEPS` says from which stages it
may be recorded, and :func:`guard_step_refusal` is the one check the Run aggregate (and the
release rules, for ``DECIDED``) consult. What a step needs besides its stage (a conclusion, valid
evidence, a verdict) is checked by the command itself or by :mod:`domain.release`.
"""

from __future__ import annotations

from types import MappingProxyType

from domain.release_states import GuardStage

_S = GuardStage

GUARD_STEPS: MappingProxyType[GuardStage, tuple[GuardStage, ...]] = MappingProxyType(
    {
        _S.EVIDENCE_CHECKED: (_S.NONE,),
        _S.REPAIRED: (_S.EVIDENCE_CHECKED,),
        _S.RECHECKED: (_S.REPAIRED,),
        _S.SEMANTIC_ATTEMPTED: (_S.EVIDENCE_CHECKED, _S.RECHECKED),
        _S.SEMANTIC_DECIDED: (_S.SEMANTIC_ATTEMPTED,),
        _S.DECIDED: (
            _S.EVIDENCE_CHECKED,
            _S.REPAIRED,
            _S.RECHECKED,
            _S.SEMANTIC_ATTEMPTED,
            _S.SEMANTIC_DECIDED,
        ),
    }
)
"""For each stage a guard event records, the stages it may be recorded after (a diagnosis).

``EVIDENCE_GUARD_INITIAL`` opens the chain; repair, recheck and the semantic guard follow it in
order; a diagnosis's ``RELEASE_DECISION`` may come anywhere after the evidence guard, and which
decision is allowed there is :func:`domain.release.release_refusal`'s to say."""


def guard_step_refusal(current: GuardStage, step: GuardStage) -> str | None:
    """Why the event that records ``step`` may not follow ``current``, or None when it may."""
    allowed = GUARD_STEPS.get(step, ())
    if current in allowed:
        return None
    expected = " or ".join(stage.value for stage in allowed) or "nothing (no event records it)"
    return f"guard stage is {current.value}, expected {expected}"
