"""What the audit reads of a run beyond the domain's rules: the guard chain, what content cites.

The SPEC §10 outcome table, the release outcome a run must finish with and the release rules are
the domain's own (``domain/release.py``), used unchanged by the runtime and by the audit.

Published content is read typed (:func:`domain.published_reader.parse_published`): an exported
payload may have been edited into any shape, and a shape the release never writes is itself a
finding (:class:`~domain.recorded.Unreadable`), not a crash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from domain.published import (
    ChatAnswer,
    DiagnosisReport,
    FallbackContent,
    GroundedAnswer,
    UngroundedAnswer,
    fact_json,
)
from domain.recorded import LegacyAnswer, LegacyFallback, LegacyReport, Unreadable, fallback_of
from domain.run import Run

if TYPE_CHECKING:
    from domain.grounding import JudgedStatement
    from domain.recorded import LegacyFact, Recorded
    from domain.values import Fact

GUARD_CHAIN = (
    Run.EvidenceRepair,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardAttempt,
    Run.SemanticGuardDecision,
)
"""The guard events that run only on a conclusion (SPEC §16.8)."""

Cited = list[tuple[str, str | None]]
"""One published statement's citations: (reference, excerpt), excerpt None when not quoted."""


def cited(content: Recorded) -> list[tuple[Cited, str | None]]:
    """What published content cites, per conclusion or fact.

    Each statement gives its citations and, for content recorded before citations existed, the
    one excerpt its fact quoted from any of its references (``""`` when it had none; None for
    a conclusion, which quoted nothing then).
    """
    match content:
        case DiagnosisReport(conclusion=conclusion, facts=facts):
            return [(_pairs(statement), None) for statement in (conclusion, *facts)]
        case FallbackContent(verified_facts=facts, observations=observed):
            records: list[tuple[Cited, str | None]] = [
                ([(o.reference, o.record)], None) for o in observed or ()
            ]
            return [(_pairs(fact), None) for fact in facts] + records
        case LegacyReport(references=references, facts=legacy):
            return [([(r, None) for r in references], None), *map(_legacy, legacy)]
        case LegacyFallback(verified_facts=legacy):
            return [_legacy(fact) for fact in legacy]
        case ChatAnswer() | GroundedAnswer() | UngroundedAnswer() | LegacyAnswer() | Unreadable():
            return []  # an answer cites passages, not invocations: see audit.answers
        case _ as unreachable:
            assert_never(unreachable)


def _pairs(fact: Fact) -> Cited:
    return [(c.reference, c.excerpt) for c in fact.citations]


def _legacy(fact: LegacyFact) -> tuple[Cited, str | None]:
    return [(r, None) for r in fact.references], fact.excerpt or ""


Judged = tuple[str, tuple[tuple[str, str], ...]]
"""A statement as the judge rules on it: its text and its (reference, excerpt) citations."""


def statements(content: DiagnosisReport | LegacyReport) -> list[tuple[object, Judged]]:
    """Each statement of a report, as a finding names it and as the judge would have seen it.

    A statement recorded before citations is judged with none.
    """
    match content:
        case DiagnosisReport(conclusion=conclusion, facts=facts):
            named = [("the conclusion", conclusion), *((fact_json(f), f) for f in facts)]
            return [(what, as_judged(fact)) for what, fact in named]
        case LegacyReport(conclusion=conclusion, facts=legacy):
            return [("the conclusion", (conclusion, ()))] + [
                (f.to_json(), (f.statement, ())) for f in legacy
            ]
        case _ as unreachable:
            assert_never(unreachable)


def as_judged(statement: Fact | JudgedStatement) -> Judged:
    """A statement's text and citations, as the judge's decision records them."""
    return statement.statement, tuple((c.reference, c.excerpt) for c in statement.citations)


def no_evidence_notes(content: Recorded) -> tuple[str, ...]:
    """The scoped NO_EVIDENCE observations a fallback publishes."""
    fallback = fallback_of(content)
    return () if fallback is None else fallback.no_evidence
