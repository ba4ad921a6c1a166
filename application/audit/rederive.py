"""The EvidenceGuard's verdict, derived again from the log with the guard's own rule.

The runtime resolves a reference through the store; here it is resolved through the run's
streams in the log: a READY + EVIDENCE_FOUND invocation gives its content, another invocation
of the run proves nothing (NOT_EVIDENCE), anything else names no source of the run. The log of
one run cannot tell an invocation of another run from a made-up id, so both count as one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.quotes import fact_problems
from domain.release_states import CitationProblem

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from domain.grounding import Evidence, GroundingRules
    from domain.values import Fact

Rejection = tuple[str, str, CitationProblem]
"""A failing citation as compared: the statement's label, the reference, the problem."""

_NOT_OURS = {CitationProblem.OTHER_RUN: CitationProblem.UNKNOWN_REFERENCE}


def rejections(
    labelled: Iterable[tuple[str, Fact]],
    evidence: Mapping[str, Evidence],
    own: Iterable[str],
    rules: GroundingRules,
) -> set[Rejection]:
    """The failing citations of ``(label, fact)`` pairs.

    ``evidence`` maps the run's READY + EVIDENCE_FOUND invocations to their content and notes;
    ``own`` names every invocation of the run.
    """
    ours = set(own)

    def source(reference: str) -> tuple[Evidence | None, CitationProblem | None]:
        if reference in evidence:
            return evidence[reference], None
        if reference in ours:
            return None, CitationProblem.NOT_EVIDENCE
        return None, CitationProblem.UNKNOWN_REFERENCE

    return {
        (label, citation.reference, problem)
        for label, fact in labelled
        for citation, problem in fact_problems(fact, source, rules)
    }


def comparable(found: Iterable[Rejection]) -> set[Rejection]:
    """Rejections with OTHER_RUN counted as UNKNOWN_REFERENCE (one run's log cannot tell)."""
    return {(label, ref, _NOT_OURS.get(problem, problem)) for label, ref, problem in found}
