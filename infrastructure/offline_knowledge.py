"""The offline model's knowledge answers and its judge of them: runbook words only, no live state.

The answer states the informative sentence of the first passage that has one which shares most
words with the question, citing it.
The judge supports a statement only when every excerpt occurs in the passage it cites, every
other word of the statement is the cited passages' (or a few framing words) and none is a
negation the quotes do not hold, and it says nothing of the systems as they are or were: a
runbook cannot tell that "checkout is broken now" or that "the deploy was bad; roll it back".
It is deterministic and errs toward UNSUPPORTED, which publishes the harness's list of the
passages instead.
"""

from __future__ import annotations

import re
from typing import Any

from domain.answer_rules import quotable_sentences
from domain.grounding import normalise, occurs
from infrastructure.knowledge import ASKED_AS, STOP_WORDS

FRAMING = frozenset(
    """a an the from in of on to per see says say according runbook runbooks section passage
    passages step steps first then next and or also it its this that these those as is are be
    with for by your you do does""".split()
)
"""Words a statement may add to the passages' own, to frame them (never a negation)."""

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_CLAUSES = re.compile(r"[.;:!?](?:\s|$)|,\s*(?:and|but|so)\s|\s(?:but|so)\s|\s+[-–—]\s+")
_CONDITIONAL = re.compile(
    r"\b(?:if|when|whenever|unless|in case|whether|until|once|before|after)\b", re.IGNORECASE
)
_HEDGED = re.compile(
    r"\b(?:usually|often|typically|can|may|might|could|commonly|generally|sometimes|tends?)\b",
    re.IGNORECASE,
)
_NOW = re.compile(
    r"\b(?:now|currently|right now|at the moment|at present|today|yesterday|tonight|still"
    r"|this (?:morning|afternoon|evening|week)|last (?:night|week|hour))\b",
    re.IGNORECASE,
)
_STATE = re.compile(
    r"\b(?:is|are|was|were|has been|have been|became|went|got|'s)\s+(?:\w+\s+){0,2}?"
    r"(?:down|broken|failing|failed|slow|bad|degraded|unhealthy|healthy|fine|ok|okay|overloaded"
    r"|unavailable|erroring|crashing|crashed|timing out|out of memory|the (?:root )?cause"
    r"|to blame|responsible|at fault)\b",
    re.IGNORECASE,
)
_CAUSE = re.compile(
    r"\b(?:caused|causing|led to|resulted in|root cause|blamed?|because of|due to)\b",
    re.IGNORECASE,
)
_EVENT = re.compile(
    r"\b(?:broke|crashed|went down|regressed|spiked|degraded|failed over|fell over)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|never|no|none|nothing|without|avoid|instead|opposite|wrong|false|cannot)\b"
    r"|n['’]t\b",
    re.IGNORECASE,
)
_MOMENT = re.compile(r"\b(?:\d{4}-\d\d-\d\d|\d{1,2}:\d\d|v\d+(?:\.\d+)+)\b")


MIN_COVERAGE = 0.75
"""The least share of the question's words a passage's sentence (with its title) must hold for
the offline model to state it; below, it states nothing and the harness lists the passages."""


def answer(passages: list[dict[str, Any]], question: str = "") -> dict[str, Any]:
    """One statement: the sentence of the first passage with one that best answers ``question``.

    Best: it keeps the question's negation (asked what happens when a page is *not*
    acknowledged, a sentence about acknowledging is no answer), then shares most words with it.
    A sentence holding less than :data:`MIN_COVERAGE` of the question's words (with its title)
    is not stated: the offline model would rather say nothing than something beside the point.
    """
    asked, negated = _stems(question), bool(_NEGATION.search(question))
    for passage in passages:
        quotes = quotable_sentences(str(passage.get("text", "")))
        if not quotes:
            continue
        best = max(
            quotes,
            key=lambda q: (bool(_NEGATION.search(q)) == negated, len(asked & _stems(q))),
        )  # max keeps the first of ties
        title = str(passage.get("title", ""))
        if _coverage(question, asked, _stems(f"{best} {title}"), title) < MIN_COVERAGE:
            break
        said = f"From the runbook section [{passage['id']}] ({title}): {best}"
        cited = [{"reference": passage["id"], "excerpt": best}]
        return {"statements": [{"statement": said, "citations": cited}]}
    return {"statements": []}


def _stems(text: str) -> set[str]:
    """The first four letters of each content word ("paged" and "page" alike)."""
    words = (w.casefold() for w in _WORD.findall(text))
    return {w[:4] for w in words if len(w) >= 4 and w not in STOP_WORDS}


def _coverage(question: str, asked: set[str], held: set[str], title: str) -> float:
    """The share of the question's words the sentence and title hold, or its heading asks for."""
    if not asked:
        return 1.0
    heading = title.rpartition(" — ")[2].casefold()
    synonyms = {w for h in _WORD.findall(heading) for w in ASKED_AS.get(h, frozenset())}
    words = {w.casefold()[:4]: w.casefold() for w in _WORD.findall(question)}
    covered = {stem for stem in asked if stem in held or words.get(stem) in synonyms}
    return len(covered) / len(asked)


def verdicts(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A verdict for each statement of the judge's payload (``statements`` and ``passages``)."""
    passages: dict[str, dict[str, str]] = data.get("passages", {})
    return [
        {
            "statement": item["statement"],
            "verdict": "SUPPORTED" if supported(item, passages) else "UNSUPPORTED",
        }
        for item in data.get("statements", [])
    ]


def supported(item: dict[str, Any], passages: dict[str, dict[str, str]]) -> bool:
    """Whether the cited passages support the statement, as the offline judge reads them."""
    citations: list[dict[str, str]] = item.get("citations", [])
    cited = [passages.get(c["reference"]) for c in citations]
    if not citations or any(p is None for p in cited):
        return False
    if not all(occurs(c["excerpt"], passages[c["reference"]]["text"]) for c in citations):
        return False
    named = {c["reference"]: passages[c["reference"]] for c in citations}
    quoted = [c["excerpt"] for c in citations] + [f"{r} {p['title']}" for r, p in named.items()]
    quoted += [*named, *(p["title"] for p in named.values())]
    said = _unquoted(str(item.get("text", "")), quoted)
    sources = " ".join(f"{ref} {p['title']} {p['text']}" for ref, p in named.items())
    if _NEGATION.search(said) or live_claim(said, sources) is not None:
        return False
    return not _words_beyond(said, sources)


def live_claim(said: str, sources: str) -> str | None:
    """The first clause of ``said`` that states the live state of a system, or None.

    A clause naming a date, a time or a version the passages do not, or saying "now", is one;
    so is a clause that is no condition ("if …", "when …") and says what a system is or was
    (down, slow, broken, bad, the cause…), what caused what (unless hedged: "usually", "can"…)
    or that something broke, crashed or went down.
    """
    for moment in _MOMENT.finditer(said):
        if moment.group(0) not in sources:
            return moment.group(0)
    for clause in (c.strip() for c in _CLAUSES.split(said)):
        if not clause or _CONDITIONAL.search(clause):
            continue
        if _NOW.search(clause) or _STATE.search(clause) or _EVENT.search(clause):
            return clause
        if _CAUSE.search(clause) and not _HEDGED.search(clause):
            return clause
    return None


def _unquoted(statement: str, quoted: list[str]) -> str:
    """The statement without what it quotes (excerpts, passage titles and ids): its own words."""
    said = normalise(statement)
    for piece in sorted(quoted, key=len, reverse=True):
        words = normalise(piece)
        if words:
            said = said.replace(words, " . ")
    return said


def _words_beyond(said: str, sources: str) -> set[str]:
    """The words of ``said`` that are neither the passages' nor framing words."""
    known = {w.casefold() for w in _WORD.findall(sources)} | FRAMING
    return {w.casefold() for w in _WORD.findall(said)} - known
