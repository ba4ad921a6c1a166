"""The rules an audit holds a run to, as data: the SPEC §10 table and what published content cites.

Published content is read defensively: an exported payload may have been edited into any shape,
and a shape the release never writes is itself a finding, not a crash.
"""

from __future__ import annotations

from typing import Any

from domain.run import Run
from domain.states import FallbackType, ReleaseOutcome, RunState

PUBLISHED = (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)
"""The outcomes that publish content."""

GUARD_CHAIN = (
    Run.EvidenceRepair,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardAttempt,
    Run.SemanticGuardDecision,
)
"""The guard events that run only on a conclusion (SPEC §16.8)."""

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
"""SPEC §10: every legal (RunState, ReleaseOutcome, FallbackType) of a finished run."""


def is_legal_row(state: RunState, outcome: ReleaseOutcome, fallback: FallbackType | None) -> bool:
    """Whether a finished run's state, outcome and published fallback type are a row of §10."""
    return (state, outcome, fallback) in OUTCOME_TABLE


def expected_outcome(
    state: RunState, release: tuple[ReleaseOutcome, FallbackType | None] | None
) -> ReleaseOutcome:
    """The ReleaseOutcome SPEC §3 and §10 give a run that ended ``state`` after ``release``.

    SUCCESS publishes what Release decided; only the budget fallback keeps BUDGET_EXHAUSTED;
    CANCELLED is its own outcome; every other ending is FAILED, whatever was decided before it.
    """
    if state is RunState.CANCELLED:
        return ReleaseOutcome.CANCELLED
    if state is RunState.SUCCESS and release is not None:
        return release[0]
    if state is RunState.BUDGET_EXHAUSTED and release == (
        ReleaseOutcome.FALLBACK,
        FallbackType.INSUFFICIENT_EVIDENCE,
    ):
        return ReleaseOutcome.FALLBACK
    return ReleaseOutcome.FAILED


Cited = list[tuple[Any, str | None]]
"""One published statement's citations: (reference, excerpt), excerpt None when not quoted."""


def cited(content: Any) -> list[tuple[Cited, str | None]]:
    """What published content cites, per conclusion or fact.

    Each statement gives its citations and, for content recorded before citations existed, the
    one excerpt its fact quoted from any of its references (``""`` when it had none; None for
    a conclusion, which quoted nothing then).
    """
    if not isinstance(content, dict):
        return []
    found: list[tuple[Cited, str | None]] = []
    if "citations" in content:
        found.append((_pairs(content["citations"]), None))
    elif "references" in content:
        found.append(([(r, None) for r in _items(content["references"])], None))
    for key in ("facts", "verified_facts"):
        for fact in _items(content.get(key)):
            fact = fact if isinstance(fact, dict) else {}
            if "citations" in fact:
                found.append((_pairs(fact["citations"]), None))
                continue
            excerpt = fact.get("excerpt")
            legacy = excerpt if isinstance(excerpt, str) else ""
            found.append(([(r, None) for r in _items(fact.get("references"))], legacy))
    return found


def _pairs(citations: Any) -> Cited:
    pairs: Cited = []
    for citation in _items(citations):
        citation = citation if isinstance(citation, dict) else {}
        excerpt = citation.get("excerpt")
        pairs.append((citation.get("reference"), excerpt if isinstance(excerpt, str) else ""))
    return pairs


def no_evidence_notes(content: Any) -> list[str]:
    """The scoped NO_EVIDENCE observations a fallback publishes."""
    if not isinstance(content, dict):
        return []
    return [str(note) for note in _items(content.get("no_evidence"))]


def _items(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]
