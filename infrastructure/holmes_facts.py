"""Which parts of an LLM-judged statement a plain text check can hold an answer to.

HolmesGPT's expected outputs are statements ("The pod was killed due to it being out of
memory") that an LLM judges against an answer. A case of the harness checks texts instead: each
``must`` has to occur in what was published. So only literal facts are taken: quoted texts
(```DEPLOY_ENV```, "OOMKilled") and identifiers (names joined by ``-_./:=``, versions, words with
inner capitals, numbers of three digits or more), and only those that also occur in the evidence
an answer could cite (the recorded tool outputs) or in the question. A negated statement ("does
not mention X") is never turned into a ``must``. Whatever is not taken stays with the case's
notes, for a person (or an LLM judge) to read.
"""

from __future__ import annotations

import re

_QUOTED = re.compile(r"`([^`]+)`|\"([^\"]+)\"|(?<!\w)'([^']+)'(?!\w)")
_TOKEN = re.compile(r"[A-Za-z0-9][\w.:/%=-]*[A-Za-z0-9%]")
_JOINED = re.compile(r"\d|\w[-_./:=]\w|[a-z][A-Z]")
_NEGATED = re.compile(r"\b(?:not|no|never|none|without|nor)\b|n't\b", re.IGNORECASE)
_NOT_IDENTIFIERS = frozenset({"e.g", "i.e", "etc"})


def literal_facts(statements: list[str], evidence: str) -> tuple[list[str], list[str]]:
    """The checkable facts of ``statements`` that occur in ``evidence`` (case-insensitively).

    Returns the facts (first spelling kept, no repeats) and the statements none was taken from.
    """
    known = evidence.casefold()
    facts: list[str] = []
    seen: set[str] = set()
    unchecked: list[str] = []
    for statement in statements:
        found = [] if _NEGATED.search(statement) else candidates(statement)
        kept = [fact for fact in found if fact.casefold() in known]
        for fact in kept:
            if fact.casefold() not in seen:
                seen.add(fact.casefold())
                facts.append(fact)
        if not kept:
            unchecked.append(statement)
    return facts, unchecked


def candidates(statement: str) -> list[str]:
    """Quoted texts, then identifiers outside quotes, in the order they appear."""
    quoted = [next(group for group in m.groups() if group) for m in _QUOTED.finditer(statement)]
    rest = _QUOTED.sub(" ", statement)
    tokens = [
        token
        for token in _TOKEN.findall(rest)
        if (len(token) >= 3 if token.isdigit() else _JOINED.search(token))
        and token.lower() not in _NOT_IDENTIFIERS
    ]
    return [text.strip() for text in (*quoted, *tokens) if text.strip()]
