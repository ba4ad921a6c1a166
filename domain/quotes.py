"""A quote inside a statement is a citation (design §10.1).

A statement that puts words in quotation marks tells the reader the evidence says exactly
that. So every quoted span of a statement — between any of Unicode's quotation marks as
languages pair them (straight, curly and low double and single quotes, guillemets single and
double, CJK corner brackets, fullwidth quotes), ornamental quotes, backticks, or apostrophes
used as quotation marks — must equal one of that statement's own excerpts (after the one
normalisation); otherwise the statement fails the EvidenceGuard as if one of its citations had
(``QUOTE_NOT_CITED``). An opening mark that is never closed quotes the rest of the statement.
An apostrophe (straight, curly or fullwidth) counts only where it opens and closes at word
bounds, so the apostrophes of ``checkout's`` and ``payments’ pool`` quote nothing.
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
    "\u201d": "\u201d",  # ” ” (Swedish, Finnish)
    "\u201e": "\u201c\u201d",  # „ “ and „ ”
    "\u201f": "\u201d",  # ‟ ”
    "\u2e42": "\u201c\u201d",  # ⹂ “
    "\u2018": "\u2019",  # ‘ ’
    "\u201a": "\u2018\u2019",  # ‚ ‘ and ‚ ’
    "\u201b": "\u2019",  # ‛ ’
    "\u00ab": "\u00bb",  # « »
    "\u00bb": "\u00ab\u00bb",  # » « and » » (as some languages open)
    "\u2039": "\u203a",  # ‹ ›
    "\u203a": "\u2039\u203a",  # › ‹ and › ›
    "\u300c": "\u300d",  # 「 」
    "\u300e": "\u300f",  # 『 』
    "\u301d": "\u301e\u301f",  # 〝 〞 and 〝 〟
    "\ufe41": "\ufe42",  # vertical 「 」
    "\ufe43": "\ufe44",  # vertical 『 』
    "\uff62": "\uff63",  # halfwidth 「 」
    "\uff02": "\uff02",  # fullwidth " "
    "\u275b": "\u275c",  # ornament ‘ ’
    "\u275d": "\u275e",  # ornament “ ”
    "\U0001f676": "\U0001f677",  # ornament “ ” (sans-serif)
    "`": "`",
}
"""Each opening quotation mark and the marks that close it: every pair of Unicode's
Quotation_Mark characters as languages use them, the ornaments and backticks."""
APOSTROPHES = frozenset("'\u2019\uff07")
"""Marks that are apostrophes inside words and quotation marks at word bounds (`'`, `’`, `＇`):
each opens only after a non-letter and closes itself only before one."""


def quoted_spans(statement: str) -> Iterator[str]:
    """The spans of ``statement`` inside quotation marks, in order (an unclosed one to the end)."""
    at = 0
    while at < len(statement):
        mark = statement[at]
        if mark in APOSTROPHES and _opens(statement, at):
            end = _closing_apostrophe(statement, at + 1, mark)
            if end is not None:
                yield statement[at + 1 : end]
                at = end + 1
                continue
        elif mark in CLOSING and mark not in APOSTROPHES:
            end = _closing(statement, at + 1, CLOSING[mark])
            if end == -1:
                yield statement[at + 1 :]
                return
            yield statement[at + 1 : end]
            at = end + 1
            continue
        at += 1


def _closing(text: str, start: int, marks: str) -> int:
    """Where the first of ``marks`` occurs in ``text`` from ``start``, or -1."""
    found = [at for at in (text.find(mark, start) for mark in marks) if at != -1]
    return min(found, default=-1)


def uncited_quotes(statement: str, excerpts: Iterable[str]) -> list[str]:
    """The quoted spans of ``statement`` that are none of ``excerpts`` (both normalised).

    Where the statement holds an excerpt verbatim, the quotation marks inside it are the
    evidence's own (a runbook's `code`, a log's ``msg="…"``), not the model's: each excerpt is
    set aside as one cited quote before the statement's own quotation marks are read.
    """
    cited = {normalise(excerpt) for excerpt in excerpts} - {""}
    text = normalise(statement)
    if _CITED not in text:
        for excerpt in sorted(cited, key=len, reverse=True):
            text = text.replace(excerpt, _CITED)
    spans = (normalise(span) for span in quoted_spans(text))
    return [span for span in spans if span not in cited and span.replace(_CITED, "") != ""]


_CITED = "\ufffc"
"""Stands for an excerpt the statement holds verbatim while its quotation marks are read."""


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
    """An apostrophe opens a quotation after a non-letter and before a non-space."""
    before_ok = at == 0 or not text[at - 1].isalnum()
    return before_ok and at + 1 < len(text) and not text[at + 1].isspace()


def _closing_apostrophe(text: str, start: int, mark: str) -> int | None:
    """Where a quotation opened by the apostrophe ``mark`` closes, or None if nowhere."""
    at = text.find(mark, start)
    while at != -1:
        after_ok = at + 1 == len(text) or not text[at + 1].isalnum()
        if after_ok and not text[at - 1].isspace():
            return at
        at = text.find(mark, at + 1)
    return None
