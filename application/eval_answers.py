"""What a run published, as an eval scores it (:class:`domain.evals.Answer`).

The text scored is everything a reader was given: a diagnosis's conclusion and facts with the
excerpts they cite; a knowledge answer's text, its excerpts and the titles of the passages it
cites; a fallback's message, observations, facts and the harness's lines on what it found
nothing in, could not check and needs. The harness's list of passages instead of an ungrounded
knowledge answer claims nothing: it is scored as a fallback (of no :class:`FallbackType`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from domain.evals import Answer, Expected
from domain.published import (
    ChatAnswer,
    DiagnosisReport,
    FallbackContent,
    GroundedAnswer,
    UngroundedAnswer,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from domain.published import Published
    from domain.values import Fact


def answer_of(published: Published | None) -> Answer:
    """The scored form of ``published`` (None: the run published nothing)."""
    match published:
        case None:
            return Answer(published=False, kind=None, text="")
        case DiagnosisReport(conclusion=conclusion, facts=facts):
            return Answer(True, Expected.CONCLUSION, _joined(_fact_texts([conclusion, *facts])))
        case GroundedAnswer(text=text, citations=citations, passages=passages):
            cited = [c.excerpt for c in citations] + [p.title for p in passages]
            return Answer(True, Expected.ANSWER, _joined([text, *cited]))
        case ChatAnswer(text=text):
            return Answer(True, Expected.ANSWER, text)
        case UngroundedAnswer(text=text, passages=listed):
            said = [text, *(f"{p.title}: {p.sentence}" for p in listed)]
            return Answer(False, Expected.FALLBACK, _joined(said))
        case FallbackContent():
            return Answer(
                False, Expected.FALLBACK, _joined(_fallback_texts(published)),
                published.fallback_type.value,
            )  # fmt: skip
        case _ as unreachable:
            assert_never(unreachable)


def published_kind(published: Published | None) -> str:
    """What was published, in two words at most: ``diagnosis``, ``fallback TYPE``, ..."""
    match published:
        case None:
            return "nothing"
        case DiagnosisReport():
            return "diagnosis"
        case GroundedAnswer():
            return "answer"
        case ChatAnswer():
            return "chat answer"
        case UngroundedAnswer(refusal=refusal):
            return f"passages listed ({refusal.value})"
        case FallbackContent(fallback_type=kind):
            return f"fallback {kind.value}"
        case _ as unreachable:
            assert_never(unreachable)


def headline(published: Published | None) -> str:
    """The first thing a reader was given: a conclusion, an answer's text, a fallback's message."""
    match published:
        case None:
            return ""
        case DiagnosisReport(conclusion=conclusion):
            return conclusion.statement
        case GroundedAnswer(text=text) | ChatAnswer(text=text) | UngroundedAnswer(text=text):
            return text
        case FallbackContent(message=message):
            return message
        case _ as unreachable:
            assert_never(unreachable)


def _fact_texts(facts: Iterable[Fact]) -> list[str]:
    """Each statement, then the excerpts it cites."""
    return [part for f in facts for part in (f.statement, *(c.excerpt for c in f.citations))]


def _fallback_texts(fallback: FallbackContent) -> list[str]:
    return [
        fallback.message,
        *(o.text for o in fallback.observations or ()),
        *_fact_texts(fallback.verified_facts),
        *fallback.no_evidence,
        *fallback.not_checked,
        *fallback.missing_info,
    ]


PART_SEPARATOR = "\n\u241e\n"
"""Between two parts of the text (SYMBOL FOR RECORD SEPARATOR): scoring collapses whitespace, so
a line break alone would let a ``must`` match the end of one part and the start of the next."""


def _joined(texts: Iterable[str]) -> str:
    """One text, its parts kept apart (a ``must`` never matches across two of them)."""
    return PART_SEPARATOR.join(texts)
