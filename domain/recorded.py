"""What a ``RELEASE_DECISION`` may hold, read back typed (design §10.1).

Today's content (:data:`domain.published.Published`), the shapes older logs hold — before
citations (``LegacyReport``, ``LegacyFallback``, ``LegacyFact``) and before the answer routes
were guarded (``LegacyAnswer``) — or :class:`Unreadable`: a shape no version of the release
wrote, which a log edited by hand or by an attacker may hold.
:func:`domain.published_reader.parse_published` reads a stored dict into one of these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, assert_never

from domain.published import (
    ChatAnswer,
    DiagnosisReport,
    FallbackContent,
    GroundedAnswer,
    Published,
    UngroundedAnswer,
)

if TYPE_CHECKING:
    from domain.published import Json
    from domain.release_states import FallbackType


@dataclass(frozen=True)
class LegacyFact:
    """A fact recorded before citations: its references and the one excerpt it quoted."""

    statement: str
    references: tuple[str, ...]
    excerpt: str | None

    def to_json(self) -> Json:
        """The fact as stored."""
        return {
            "statement": self.statement,
            "references": list(self.references),
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True)
class LegacyReport:
    """A diagnosis report recorded before citations: the conclusion names references only."""

    kind: ClassVar[Literal["diagnosis"]] = "diagnosis"
    conclusion: str
    references: tuple[str, ...]
    facts: tuple[LegacyFact, ...]

    def to_json(self) -> Json:
        """The report as stored."""
        return {
            "kind": self.kind,
            "conclusion": self.conclusion,
            "references": list(self.references),
            "facts": [f.to_json() for f in self.facts],
        }


@dataclass(frozen=True)
class LegacyFallback:
    """A fallback recorded before failed tool calls and missing items were listed."""

    kind: ClassVar[Literal["fallback"]] = "fallback"
    fallback_type: FallbackType
    message: str
    verified_facts: tuple[LegacyFact, ...]
    no_evidence: tuple[str, ...]
    missing_info: tuple[str, ...]

    def to_json(self) -> Json:
        """The fallback as stored."""
        return {
            "kind": self.kind,
            "fallback_type": self.fallback_type.value,
            "message": self.message,
            "verified_facts": [f.to_json() for f in self.verified_facts],
            "no_evidence": list(self.no_evidence),
            "missing_info": list(self.missing_info),
        }


@dataclass(frozen=True)
class LegacyAnswer:
    """An answer recorded before the answer routes were guarded: not held to their rules."""

    kind: ClassVar[Literal["answer"]] = "answer"
    text: str
    citations: tuple[str, ...]
    """The ids of the passages the model was given."""

    def to_json(self) -> Json:
        """The answer as stored."""
        return {"kind": self.kind, "text": self.text, "citations": list(self.citations)}


@dataclass(frozen=True)
class Unreadable:
    """Stored content of a shape no version of the release wrote.

    ``reason`` says what is wrong, worded to follow "publishes"; the audit names it as a
    violation.
    """

    kind: ClassVar[None] = None
    reason: str


Recorded = Published | LegacyReport | LegacyFallback | LegacyAnswer | Unreadable
"""What a log's release decision holds, read back."""


def conclusion_of(content: Recorded) -> str | None:
    """The conclusion a diagnosis report published; None for any other content."""
    match content:
        case DiagnosisReport(conclusion=conclusion):
            return conclusion.statement
        case LegacyReport(conclusion=statement):
            return statement
        case (
            FallbackContent()
            | ChatAnswer()
            | GroundedAnswer()
            | UngroundedAnswer()
            | LegacyFallback()
            | LegacyAnswer()
            | Unreadable()
        ):
            return None
        case _ as unreachable:
            assert_never(unreachable)


def fallback_of(content: Recorded | None) -> FallbackContent | LegacyFallback | None:
    """The safe fallback a release published; None for any other content (or none)."""
    match content:
        case FallbackContent() | LegacyFallback():
            return content
        case (
            DiagnosisReport()
            | ChatAnswer()
            | GroundedAnswer()
            | UngroundedAnswer()
            | LegacyReport()
            | LegacyAnswer()
            | Unreadable()
            | None
        ):
            return None
        case _ as unreachable:
            assert_never(unreachable)
