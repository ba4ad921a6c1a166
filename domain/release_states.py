"""The words of a run's release (SPEC §2, §10): verdicts, outcomes, fallbacks and guard stages.

The semantic judge's verdict, what the user was given and why a fallback was, how far the
release pipeline went, and why a citation does not prove its statement. Each is its own
``Enum``, as every axis in :mod:`domain.states`.
"""

from __future__ import annotations

from enum import Enum


class SemanticVerdict(Enum):
    """The semantic judge's verdict; "unavailable" is a technical outcome, not a verdict."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ReleaseOutcome(Enum):
    """What the user was given (SPEC §10); not a RunState."""

    SUCCESS = "SUCCESS"
    FALLBACK = "FALLBACK"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class FallbackType(Enum):
    """Why a safe fallback was published instead of a conclusion (SPEC §10)."""

    MISSING_REQUIRED_CONTEXT = "MISSING_REQUIRED_CONTEXT"
    INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"
    EVIDENCE_VALIDATION_FAILED = "EVIDENCE_VALIDATION_FAILED"
    SEMANTIC_UNSUPPORTED = "SEMANTIC_UNSUPPORTED"
    SEMANTIC_UNAVAILABLE = "SEMANTIC_UNAVAILABLE"


class GuardStage(Enum):
    """How far a run's release pipeline has gone; each stage is recorded by one event."""

    NONE = "NONE"
    EVIDENCE_CHECKED = "EVIDENCE_CHECKED"
    REPAIRED = "REPAIRED"
    RECHECKED = "RECHECKED"
    SEMANTIC_ATTEMPTED = "SEMANTIC_ATTEMPTED"
    SEMANTIC_DECIDED = "SEMANTIC_DECIDED"
    DECIDED = "DECIDED"


class CitationProblem(Enum):
    """Why a citation does not prove its statement (design §10.1; recorded by the guard)."""

    UNKNOWN_REFERENCE = "UNKNOWN_REFERENCE"
    """Not the id of any source of this run (malformed, respelled or made up)."""
    OTHER_RUN = "OTHER_RUN"
    """A tool invocation of another run."""
    NOT_EVIDENCE = "NOT_EVIDENCE"
    """A source that holds no evidence: not READY + EVIDENCE_FOUND (NO_EVIDENCE, failed, open)."""
    EXCERPT_ABSENT = "EXCERPT_ABSENT"
    """The excerpt does not occur in the cited source's content (after normalisation)."""
    EXCERPT_CUTS_A_TOKEN = "EXCERPT_CUTS_A_TOKEN"
    """The excerpt occurs only where it begins or ends inside a token (``0`` of ``0.97``)."""
    EXCERPT_QUOTES_A_NOTE = "EXCERPT_QUOTES_A_NOTE"
    """The excerpt quotes a note the harness or the tool added about a result, not a record."""
    EXCERPT_TOO_WEAK = "EXCERPT_TOO_WEAK"
    """The excerpt is too short or holds only digits, punctuation or stop words."""
    DUPLICATE = "DUPLICATE"
    """The same reference and excerpt cited twice by one statement."""
    NO_CITATION = "NO_CITATION"
    """A statement without any citation."""
    QUOTE_NOT_CITED = "QUOTE_NOT_CITED"
    """The statement quotes words (in quotation marks) that are none of its excerpts."""
