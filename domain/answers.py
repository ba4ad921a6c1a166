"""The answer routes' rules (design §10.1): a system-chat reply and a grounded knowledge answer.

A system-chat answer makes no claim about the operated systems: the model only picks one reply
of a fixed set, and the harness publishes its own text for it. A knowledge answer is published
only when every passage it cites was retrieved for the run and every excerpt is informative and
occurs verbatim in its passage (:mod:`domain.grounding`); otherwise the harness publishes the
retrieved passages' titles and first sentences instead of the model's text.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import TYPE_CHECKING, Any

from domain.grounding import (
    DEFAULT_RULES,
    Citation,
    GroundingRules,
    citation_problem,
    normalise,
    same_citation,
)
from domain.release_states import CitationProblem

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


class ChatReply(Enum):
    """The replies a system-chat answer may pick; the harness writes each one's text."""

    GREETING = "GREETING"
    CAPABILITIES = "CAPABILITIES"
    HOW_TO_ASK = "HOW_TO_ASK"
    """How to ask a diagnostic or how-to question, with an example."""
    THANKS = "THANKS"
    OUT_OF_SCOPE = "OUT_OF_SCOPE"


class AnswerRefusal(Enum):
    """Why the model's answer was not published (the harness published its own text instead)."""

    NOT_JSON = "NOT_JSON"
    """The answer is not JSON."""
    NOT_A_REPLY = "NOT_A_REPLY"
    """System chat: JSON, but not ``{"reply": …}`` naming one reply of the set."""
    NOT_AN_ANSWER = "NOT_AN_ANSWER"
    """Knowledge: JSON, but not ``{"text": …, "citations": [{"reference", "excerpt"}]}``."""
    NO_CITATION = "NO_CITATION"
    """Knowledge: the answer cites no passage."""
    CITATION_REJECTED = "CITATION_REJECTED"
    """Knowledge: a citation failed (its problem is recorded with it)."""
    NOTHING_RETRIEVED = "NOTHING_RETRIEVED"
    """Knowledge: no passage matched the question, so no answer could be grounded (no call)."""
    TOO_LARGE = "TOO_LARGE"
    """The answer was over the size limit: refused whole, unread."""


REFUSED_REPLY = ChatReply.HOW_TO_ASK
"""What a refused system-chat answer publishes: how to ask, never the model's words."""
MAX_ANSWER_CHARS = 4000
"""The longest knowledge answer text published."""
MAX_CITATIONS = 10
FIRST_SENTENCE_CHARS = 300
"""A passage's first sentence is cut to this many characters (at a word, still verbatim)."""

_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_UNITS = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)])\s)|\n(?=#)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[])")


def pick_reply(answer: Any) -> tuple[ChatReply, AnswerRefusal | None]:
    """The reply a parsed system-chat answer picked, or :data:`REFUSED_REPLY` and why not."""
    if isinstance(answer, dict) and set(answer) == {"reply"}:
        try:
            return ChatReply(answer["reply"]), None
        except ValueError:
            pass
    return REFUSED_REPLY, AnswerRefusal.NOT_A_REPLY


def knowledge_answer(answer: Any) -> tuple[str, tuple[Citation, ...]] | AnswerRefusal:
    """A parsed knowledge answer's text and citations, or why it is no answer at all."""
    if not isinstance(answer, dict) or set(answer) != {"text", "citations"}:
        return AnswerRefusal.NOT_AN_ANSWER
    text, items = answer["text"], answer["citations"]
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_ANSWER_CHARS:
        return AnswerRefusal.NOT_AN_ANSWER
    if not isinstance(items, list) or len(items) > MAX_CITATIONS:
        return AnswerRefusal.NOT_AN_ANSWER
    citations = []
    for item in items:
        if not isinstance(item, dict) or set(item) != {"reference", "excerpt"}:
            return AnswerRefusal.NOT_AN_ANSWER
        if not isinstance(item["reference"], str) or not isinstance(item["excerpt"], str):
            return AnswerRefusal.NOT_AN_ANSWER
        citations.append(Citation(item["reference"], item["excerpt"]))
    if not citations:
        return AnswerRefusal.NO_CITATION
    return text, tuple(citations)


def rejected_citations(
    citations: Sequence[Citation],
    passages: Mapping[str, str],
    rules: GroundingRules = DEFAULT_RULES,
) -> list[tuple[Citation, CitationProblem]]:
    """Each citation that does not prove anything in the retrieved ``passages`` (id → text).

    A passage that was not retrieved for this run is an unknown reference, whatever the
    knowledge base holds; the same citation twice is a duplicate, as in the EvidenceGuard.
    """
    seen: set[tuple[str, str]] = set()
    rejected: list[tuple[Citation, CitationProblem]] = []
    for citation in citations:
        problem = (
            CitationProblem.DUPLICATE
            if same_citation(citation) in seen
            else citation_problem(citation, passages.get(citation.reference), rules)
        )
        seen.add(same_citation(citation))
        if problem is not None:
            rejected.append((citation, problem))
    return rejected


def sentences(text: str) -> list[str]:
    """The passage's sentences in order, each verbatim after normalisation (no list markers).

    A list item, a heading and a paragraph each start a new sentence; within them a sentence
    ends at ``.``, ``!`` or ``?`` before a space and a capital, digit, quote or bracket.
    """
    found: list[str] = []
    for unit in _UNITS.split(text):
        body = normalise(_ITEM.sub("", unit, count=1).lstrip("# "))
        found.extend(piece for piece in _SENTENCE_END.split(body) if piece)
    return found


def first_sentence(text: str) -> str:
    """The passage's first sentence, cut at a word to :data:`FIRST_SENTENCE_CHARS` (verbatim)."""
    first = next(iter(sentences(text)), "")
    if len(first) <= FIRST_SENTENCE_CHARS:
        return first
    cut = first[:FIRST_SENTENCE_CHARS]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def quotable_sentences(text: str, rules: GroundingRules = DEFAULT_RULES) -> list[str]:
    """The passage's sentences an excerpt may quote: those informative enough to prove."""
    return [sentence for sentence in sentences(text) if rules.weakness(sentence) is None]
