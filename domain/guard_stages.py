"""The guard chain of SPEC §10 as data: the stages each guard event may follow.

Each guard event records one :class:`GuardStage`; :data:`GUARD_STEPS` says from which stages it
may be recorded in a diagnosis, :data:`KNOWLEDGE_STEPS` in a knowledge answer (the judge only),
and :func:`guard_step_refusal` is the one check the Run aggregate (and the release rules, for
``DECIDED``) consult. What a step needs besides its stage (a conclusion, valid
evidence, a verdict) is checked by the command itself or by :mod:`domain.release`.
"""

from __future__ import annotations

from types import MappingProxyType

from domain.release_states import GuardStage
from domain.states import Intent

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


KNOWLEDGE_STEPS: MappingProxyType[GuardStage, tuple[GuardStage, ...]] = MappingProxyType(
    {
        _S.SEMANTIC_ATTEMPTED: (_S.NONE,),
        _S.SEMANTIC_DECIDED: (_S.SEMANTIC_ATTEMPTED,),
        _S.DECIDED: (_S.NONE, _S.SEMANTIC_DECIDED),
    }
)
"""The same for a KNOWLEDGE_QUERY answer: the judge rules on the answer's statements, once.

An answer refused before the judge (nothing retrieved, not an answer, a citation that does not
prove) is released from ``NONE``; one the judge ruled on only after its decision."""

CHAT_STEPS: MappingProxyType[GuardStage, tuple[GuardStage, ...]] = MappingProxyType(
    {_S.DECIDED: (_S.NONE,)}
)
"""The same for a SYSTEM_CHAT answer: no guard runs, the harness writes the text."""

STEPS_OF: MappingProxyType[Intent, MappingProxyType[GuardStage, tuple[GuardStage, ...]]] = (
    MappingProxyType(
        {
            Intent.DIAGNOSIS: GUARD_STEPS,
            Intent.KNOWLEDGE_QUERY: KNOWLEDGE_STEPS,
            Intent.SYSTEM_CHAT: CHAT_STEPS,
        }
    )
)
"""The guard table of each route."""


def guard_step_refusal(
    current: GuardStage, step: GuardStage, intent: Intent = Intent.DIAGNOSIS
) -> str | None:
    """Why the event that records ``step`` may not follow ``current``, or None when it may.

    ``intent`` picks the route's table (:data:`STEPS_OF`); a diagnosis's by default.
    """
    allowed = STEPS_OF[intent].get(step, ())
    if current in allowed:
        return None
    expected = " or ".join(stage.value for stage in allowed) or "nothing (no event records it)"
    return f"guard stage is {current.value}, expected {expected}"
