"""The answer routes' rules (design §10.1): a system-chat reply and a grounded knowledge answer.

A system-chat answer makes no claim about the operated systems: the model only picks one reply
of a fixed set, and the harness publishes its own text for it. A knowledge answer is a list of
statements, each with its citations. It is published only when every passage it cites was
retrieved for the run, every excerpt is informative and occurs verbatim in its passage
(:mod:`domain.grounding`), every quote in a statement is one of its excerpts
(:mod:`domain.quotes`), no statement names a moment of the live systems its excerpts do not
(:func:`live_reference`) and the judge supported every statement; otherwise the harness
publishes the retrieved passages' titles and first sentences instead of the model's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from domain.grounding import (
    DEFAULT_RULES,
    Citation,
    GroundingRules,
    JudgedStatement,
    citation_problem,
    normalise,
    same_citation,
)
from domain.quotes import uncited_quotes
from domain.release_states import CitationProblem, SemanticVerdict
from domain.values import Fact

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
    LIVE_STATE = "LIVE_STATE"
    """Knowledge: a statement names a date, a time or "now" that its excerpts do not."""
    JUDGE_UNSUPPORTED = "JUDGE_UNSUPPORTED"
    """Knowledge: the judge did not find every statement supported by the passages it cites."""
    JUDGE_UNAVAILABLE = "JUDGE_UNAVAILABLE"
    """Knowledge: the judge gave no verdict for every statement, so none was checked."""


PARSE_REFUSALS = frozenset(
    {
        AnswerRefusal.NOT_JSON,
        AnswerRefusal.NOT_AN_ANSWER,
        AnswerRefusal.NO_CITATION,
    }
)
"""The refusals a knowledge answer's text earns by itself, as its proposal records them."""


@dataclass(frozen=True)
class RetrievedPassage:
    """A runbook passage retrieved for a knowledge question, as the knowledge base stores it."""

    id: str
    title: str
    text: str


REFUSED_REPLY = ChatReply.HOW_TO_ASK
"""What a refused system-chat answer publishes: how to ask, never the model's words."""
MAX_ANSWER_CHARS = 4000
"""The longest knowledge answer text published (its statements together)."""
MAX_STATEMENTS = 10
MAX_CITATIONS = 10
"""The most citations of one statement."""
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


def knowledge_answer(answer: Any) -> tuple[Fact, ...] | AnswerRefusal:
    """A parsed knowledge answer's statements with their citations, or why it is no answer.

    The answer is ``{"statements": [{"statement": …, "citations": [{"reference", "excerpt"}]}]}``
    and nothing else; every statement cites something.
    """
    if not isinstance(answer, dict) or set(answer) != {"statements"}:
        return AnswerRefusal.NOT_AN_ANSWER
    items = answer["statements"]
    if not isinstance(items, list) or not items or len(items) > MAX_STATEMENTS:
        return AnswerRefusal.NOT_AN_ANSWER
    statements = [_statement(item) for item in items]
    if any(s is None for s in statements):
        return AnswerRefusal.NOT_AN_ANSWER
    found = tuple(s for s in statements if s is not None)
    if len(answer_text(found)) > MAX_ANSWER_CHARS:
        return AnswerRefusal.NOT_AN_ANSWER
    if any(not s.citations for s in found):
        return AnswerRefusal.NO_CITATION
    return found


def _statement(item: Any) -> Fact | None:
    """One statement of a knowledge answer, or None when it is not a statement and citations."""
    if not isinstance(item, dict) or set(item) != {"statement", "citations"}:
        return None
    text, cited = item["statement"], item["citations"]
    if not isinstance(text, str) or not text.strip():
        return None
    if not isinstance(cited, list) or len(cited) > MAX_CITATIONS:
        return None
    citations = []
    for one in cited:
        if not isinstance(one, dict) or set(one) != {"reference", "excerpt"}:
            return None
        if not isinstance(one["reference"], str) or not isinstance(one["excerpt"], str):
            return None
        citations.append(Citation(one["reference"], one["excerpt"]))
    return Fact(text, tuple(citations))


def answer_text(statements: Sequence[Fact]) -> str:
    """A knowledge answer's published text: its statements in order, one after another."""
    return " ".join(normalise(s.statement) for s in statements)


def answer_citations(statements: Sequence[Fact]) -> tuple[Citation, ...]:
    """A knowledge answer's published citations: its statements', each once, in order."""
    return tuple(dict.fromkeys(c for s in statements for c in s.citations))


def answer_verdict(judged: Sequence[JudgedStatement]) -> SemanticVerdict | None:
    """The judge's verdict on a knowledge answer: SUPPORTED only when it supported every statement.

    None when a statement has no verdict (the judge was unavailable) or none was judged.
    """
    verdicts = [j.verdict for j in judged]
    if not verdicts or None in verdicts:
        return None
    if all(v is SemanticVerdict.SUPPORTED for v in verdicts):
        return SemanticVerdict.SUPPORTED
    return SemanticVerdict.UNSUPPORTED


_LIVE_MOMENT = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(?::\d{2})?|right now|currently|at the moment"
    r"|at present|today|yesterday|tonight|this (?:morning|afternoon|evening|week)"
    r"|last (?:night|week|hour))\b",
    re.IGNORECASE,
)


def live_reference(statement: Fact) -> str | None:
    """The moment of the live systems a knowledge statement names, or None (design §10.1).

    A runbook holds procedures, not what is happening: a date, a clock time or a word for the
    present ("currently", "right now", "today", …) in a statement, where none of its excerpts
    says it, speaks of the live systems. The words found are returned.
    """
    quoted = " ".join(normalise(c.excerpt) for c in statement.citations).casefold()
    for found in _LIVE_MOMENT.finditer(normalise(statement.statement)):
        if found.group(0).casefold() not in quoted:
            return found.group(0)
    return None


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


def rejected_statement_citations(
    statements: Sequence[Fact],
    passages: Mapping[str, str],
    rules: GroundingRules = DEFAULT_RULES,
) -> list[tuple[Citation, CitationProblem]]:
    """Each citation of each statement that does not prove (a duplicate within its statement).

    And each quote in a statement that is none of its excerpts, as in the EvidenceGuard: a
    citation of no reference whose excerpt is the quoted span (``QUOTE_NOT_CITED``).
    """
    found: list[tuple[Citation, CitationProblem]] = []
    for statement in statements:
        found += rejected_citations(statement.citations, passages, rules)
        found += quotes_not_cited(statement)
    return found


def quotes_not_cited(statement: Fact) -> list[tuple[Citation, CitationProblem]]:
    """Each quoted span of ``statement`` that is none of its excerpts (design §10.1)."""
    excerpts = [citation.excerpt for citation in statement.citations]
    return [
        (Citation("", span), CitationProblem.QUOTE_NOT_CITED)
        for span in uncited_quotes(statement.statement, excerpts)
    ]


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
