"""A quote inside a statement is a citation (design §10.1).

A statement that puts words in quotation marks tells the reader the evidence says exactly
that. So every quoted span of a statement — between straight or curly double quotes, curly
single quotes, guillemets, backticks, or straight single quotes used as quotation marks — must
equal one of that statement's own excerpts (after the one normalisation); otherwise the
statement fails the EvidenceGuard as if one of its citations had (``QUOTE_NOT_CITED``). An
opening double quote, guillemet or backtick that is never closed quotes the rest of the
statement. A straight single quote counts only where it opens and closes at word bounds, so
the apostrophes of ``checkout's`` and ``payments' pool`` quote nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.grounding import Citation, normalise, statement_problems
from domain.release_states import CitationProblem

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from domain.grounding import GroundingRules, Source
    from domain.values import Fact

CLOSING = {
    '"': '"',
    "\u201c": "\u201d",  # “ ”
    "\u201e": "\u201c",  # „ “
    "\u2018": "\u2019",  # ‘ ’
    "\u00ab": "\u00bb",  # « »
    "\u00bb": "\u00ab",  # » « (as some languages open)
    "`": "`",
}
"""Each opening quotation mark and the mark that closes it."""


def quoted_spans(statement: str) -> Iterator[str]:
    """The spans of ``statement`` inside quotation marks, in order (an unclosed one to the end)."""
    at = 0
    while at < len(statement):
        mark = statement[at]
        if mark == "'" and _opens(statement, at):
            end = _closing_apostrophe(statement, at + 1)
            if end is not None:
                yield statement[at + 1 : end]
                at = end + 1
                continue
        elif mark in CLOSING:
            end = statement.find(CLOSING[mark], at + 1)
            if end == -1:
                yield statement[at + 1 :]
                return
            yield statement[at + 1 : end]
            at = end + 1
            continue
        at += 1


def uncited_quotes(statement: str, excerpts: Iterable[str]) -> list[str]:
    """The quoted spans of ``statement`` that are none of ``excerpts`` (both normalised)."""
    cited = {normalise(excerpt) for excerpt in excerpts}
    return [span for span in quoted_spans(statement) if normalise(span) not in cited]


def fact_problems(
    fact: Fact, source: Source, rules: GroundingRules
) -> list[tuple[Citation, CitationProblem]]:
    """Every failing citation of a statement, and every quote in it that cites nothing.

    The EvidenceGuard's whole rule for one statement, shared by the runtime and the verifier.
    A quote that is no citation is named as a citation of no reference whose excerpt is the
    quoted span.
    """
    found = statement_problems(fact.citations, source, rules)
    excerpts = [citation.excerpt for citation in fact.citations]
    found += [
        (Citation("", span), CitationProblem.QUOTE_NOT_CITED)
        for span in uncited_quotes(fact.statement, excerpts)
    ]
    return found


def _opens(text: str, at: int) -> bool:
    """A straight single quote opens a quotation after a non-letter and before a non-space."""
    before_ok = at == 0 or not text[at - 1].isalnum()
    return before_ok and at + 1 < len(text) and not text[at + 1].isspace()


def _closing_apostrophe(text: str, start: int) -> int | None:
    """Where a quotation opened by a straight single quote closes, or None if nowhere."""
    at = text.find("'", start)
    while at != -1:
        after_ok = at + 1 == len(text) or not text[at + 1].isalnum()
        if after_ok and not text[at - 1].isspace():
            return at
        at = text.find("'", at + 1)
    return None
