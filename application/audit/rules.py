"""What the audit reads of a run beyond the domain's rules: the guard chain, what content cites.

The SPEC §10 outcome table, the release outcome a run must finish with and the release rules are
the domain's own (``domain/release.py``), used unchanged by the runtime and by the audit.

Published content is read defensively: an exported payload may have been edited into any shape,
and a shape the release never writes is itself a finding, not a crash.
"""

from __future__ import annotations

from typing import Any

from domain.run import Run

GUARD_CHAIN = (
    Run.EvidenceRepair,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardAttempt,
    Run.SemanticGuardDecision,
)
"""The guard events that run only on a conclusion (SPEC §16.8)."""

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
