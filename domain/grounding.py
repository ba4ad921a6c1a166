"""Grounding: what makes a claim proven by the log (design §10.1).

A *citation* pairs an evidence reference (a tool invocation's id, or a runbook passage's id)
with an excerpt that must occur, verbatim after one normalisation, in that source's content.
An excerpt must also be *informative*: a space, a letter or a number "occurs" in almost any
text, so it proves nothing. These rules are pure functions of the claim and the content, so the
runtime and the offline verifier reach the same verdict from the same log.

Normalisation: every run of Unicode whitespace becomes one space and the ends are stripped,
then the text is put in Unicode NFC. Nothing else changes: case, punctuation and every other
character are kept, so a look-alike letter (Cyrillic ``а`` for Latin ``a``, a fullwidth digit)
does not match.

An excerpt quotes *whole tokens* (:mod:`domain.tokens`): it cannot turn ``0.97`` into ``0``,
``-40ms`` into ``40ms`` or ``ok`` followed by a combining slash into ``ok``. And it quotes only
what a tool returned: the notes the harness or the tool adds about a result (truncation,
limits, counts) are kept apart from the evidence, and never prove anything.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from domain.release_states import CitationProblem, SemanticVerdict
from domain.tokens import cuts_a_token

_WORD = re.compile(r"\w+")

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our out over own same she should
    so some such than that the their them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your
    yes ok""".split()
)
"""English words that carry no evidence on their own: an excerpt of only these proves nothing."""


@dataclass(frozen=True)
class Citation:
    """A reference and the verbatim excerpt of its content that a statement rests on."""

    reference: str
    excerpt: str


@dataclass(frozen=True)
class Evidence:
    """What a source holds: the content that can be quoted, and notes about it that cannot."""

    content: str
    notes: tuple[str, ...] = ()
    """The harness's or the tool's own words about the result (limits, counts, truncation)."""


@dataclass(frozen=True)
class RejectedCitation:
    """A citation the EvidenceGuard refused, and why (the guard's event lists each)."""

    statement: str
    """Which statement cited it: ``conclusion``, ``fact N`` or ``progress N`` (from 1)."""
    reference: str
    excerpt: str
    """The cited excerpt, cut to :data:`SHOWN_EXCERPT` characters."""
    problem: CitationProblem


@dataclass(frozen=True)
class JudgedStatement:
    """A statement exactly as the semantic judge saw it, with the judge's verdict on it."""

    statement: str
    citations: tuple[Citation, ...]
    verdict: SemanticVerdict | None
    """None when the judge gave no usable verdict (unavailable)."""


SHOWN_EXCERPT = 200
"""Characters of a rejected excerpt kept in the guard's event."""


@dataclass(frozen=True)
class GroundingRules:
    """How informative an excerpt must be (configurable; defaults justified in the design)."""

    min_words: int = 3
    """Words (runs of letters, digits or ``_``) an excerpt needs."""
    min_chars: int = 12
    """Non-space characters an excerpt needs."""

    def weakness(self, excerpt: str) -> str | None:
        """Why ``excerpt`` is too weak to prove anything, or None when it is informative."""
        text = normalise(excerpt)
        words = _WORD.findall(text)
        if len(words) < self.min_words:
            return f"{len(words)} words; an excerpt needs {self.min_words} or more"
        solid = len(text) - text.count(" ")  # normalised: its only whitespace is single spaces
        if solid < self.min_chars:
            return f"{solid} characters; an excerpt needs {self.min_chars} or more"
        if not any(_is_content_word(word) for word in words):
            return "only digits, punctuation or common words"
        return None


DEFAULT_RULES = GroundingRules()
RESTATED_SHARE = 0.8
"""A statement holding this share of another's content words says it again, reworded."""


def normalise(text: str) -> str:
    r"""The one normalisation of design §10.1: whitespace runs collapsed to a space, ends cut, NFC.

    ``str.split`` splits at exactly the characters ``\s`` matches in a ``str`` pattern (both
    are ``str.isspace``), so this is ``re.sub(r"\s+", " ", text).strip()``, only faster; NFC
    composes what can be composed, so ``e`` + U+0301 and ``é`` are the same text.
    """
    return unicodedata.normalize("NFC", " ".join(text.split()))


NOTE_LINE = re.compile(
    r"\[\d+ more (?:records (?:truncated|beyond limit=\d+)|bytes of the result not shown)\]"
)
"""A note the harness once wrote into content as a line of its own (logs before notes were
kept apart): an excerpt inside one is refused as a note."""
NOTE_END = re.compile(r" ?…\[cut: \d+ bytes\]$")
"""The note that ended a record cut short (MCP results, before notes were kept apart)."""


@lru_cache(maxsize=32)
def _parts(evidence: Evidence) -> tuple[tuple[str, ...], str]:
    """The quotable segments of ``evidence`` (normalised) and all of it, notes too, normalised.

    Every run of a citation is checked against one of a few evidence contents, often again.
    """
    segments: list[str] = []
    current: list[str] = []
    for line in evidence.content.split("\n"):
        if NOTE_LINE.fullmatch(line.strip()):
            segments.append("\n".join(current))
            current = []
        else:
            current.append(NOTE_END.sub("", line))
    segments.append("\n".join(current))
    kept = tuple(text for text in map(normalise, segments) if text)
    return kept, normalise("\n".join((evidence.content, *evidence.notes)))


def excerpt_problem(excerpt: str, evidence: Evidence) -> CitationProblem | None:
    """Why ``excerpt`` (normalised) is not whole tokens of the quotable evidence, or None.

    EXCERPT_CUTS_A_TOKEN when it occurs only where it begins or ends inside a token;
    EXCERPT_QUOTES_A_NOTE when it occurs only with a note's words; else EXCERPT_ABSENT.
    """
    needle = normalise(excerpt)
    if not needle:
        return CitationProblem.EXCERPT_ABSENT
    segments, everything = _parts(evidence)
    cut = False
    for text in segments:
        start = text.find(needle)
        while start != -1:
            if not cuts_a_token(text, start, start + len(needle)):
                return None
            cut = True
            start = text.find(needle, start + 1)
    if cut:
        return CitationProblem.EXCERPT_CUTS_A_TOKEN
    if needle in everything:
        return CitationProblem.EXCERPT_QUOTES_A_NOTE
    return CitationProblem.EXCERPT_ABSENT


def occurs(excerpt: str, content: str) -> bool:
    """Whether ``excerpt`` occurs verbatim in ``content`` (both normalised), cutting no token.

    Empty never does. The excerpt must start and end where a token of the content does: ``after
    3`` out of ``after 30s`` quotes a number the content does not hold (design §10.1).
    """
    return excerpt_problem(excerpt, Evidence(content)) is None


def citation_problem(
    citation: Citation, content: str | Evidence | None, rules: GroundingRules = DEFAULT_RULES
) -> CitationProblem | None:
    """Whether the excerpt proves anything in ``content`` (the resolved source's evidence).

    ``content`` None means the reference resolved to nothing usable; callers that know why
    (another run, no evidence) name that problem themselves before asking this. Text alone is
    evidence without notes.
    """
    if content is None:
        return CitationProblem.UNKNOWN_REFERENCE
    if rules.weakness(citation.excerpt) is not None:
        return CitationProblem.EXCERPT_TOO_WEAK
    evidence = content if isinstance(content, Evidence) else Evidence(content)
    return excerpt_problem(citation.excerpt, evidence)


Source = Callable[[str], "tuple[str | Evidence | None, CitationProblem | None]"]
"""Resolves a reference to its evidence content, or None and why it proves nothing."""


def statement_problems(
    citations: Sequence[Citation], source: Source, rules: GroundingRules = DEFAULT_RULES
) -> list[tuple[Citation, CitationProblem]]:
    """Every failing citation of one statement, with why: the EvidenceGuard's one rule.

    The runtime resolves references through the store; the offline verifier through the log.
    """
    if not citations:
        return [(Citation("", ""), CitationProblem.NO_CITATION)]
    found: list[tuple[Citation, CitationProblem]] = []
    seen: set[tuple[str, str]] = set()
    for citation in citations:
        if same_citation(citation) in seen:
            problem: CitationProblem | None = CitationProblem.DUPLICATE
        else:
            content, problem = source(citation.reference)
            if content is not None:
                problem = citation_problem(citation, content, rules)
        seen.add(same_citation(citation))
        if problem is not None:
            found.append((citation, problem))
    return found


def same_citation(citation: Citation) -> tuple[str, str]:
    """What makes two citations the same one: the reference and the excerpt once normalised.

    Whitespace is all the one normalisation changes, so an excerpt respaced (two spaces, a
    newline) quotes the same words and cited again is a DUPLICATE, not a second proof.
    """
    return citation.reference, normalise(citation.excerpt)


def restates(statement: str, other: str) -> bool:
    """Whether ``statement`` says ``other`` again: equal, or containing it, once normalised.

    Case-folded and with punctuation ignored, so "Checkout failed." restates "checkout failed".
    """
    a, b = _plain(statement), _plain(other)
    if not a or not b:
        return False
    if a == b or b in a or (a in b and len(a) >= len(b) // 2):
        return True
    said = _content_words(b)
    kept = said & _content_words(a)
    return len(said) >= 3 and len(kept) >= RESTATED_SHARE * len(said)


@lru_cache(maxsize=256)
def _plain(text: str) -> str:
    # a guard asks this of the same conclusion and facts once per pair
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    return " ".join(words)


@lru_cache(maxsize=256)
def _content_words(plain: str) -> frozenset[str]:
    return frozenset(w for w in plain.split() if _is_content_word(w))


@lru_cache(maxsize=4096)
def _is_content_word(word: str) -> bool:
    """Two letters or more, and not a stop word ("29T10" and "00Z" of a timestamp are not)."""
    return word.casefold() not in STOP_WORDS and sum(map(str.isalpha, word)) >= 2
