"""Observations: verified evidence records quoted verbatim, with their time and source.

Where no judge ruled on the model's statements (every fallback), the harness publishes the
records those statements rested on instead, worded by the harness alone (design §10.1): a
reader learns what the tools returned, when and where, and nothing the model wrote. The
runtime builds them from the citations that proved; the verifier checks each against the log
with the same functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from domain.grounding import normalise, occurs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from domain.grounding import Citation
    from domain.values import Fact

_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?![\w:.])"
)
"""An ISO 8601 time at the start of a record, as tools write them (``2026-11-29T10:05:00Z``)."""
MAX_RECORD = 600
"""Characters of an evidence record an observation quotes whole; a longer one is quoted by the
excerpt that was cited from it."""


def record_time(record: str) -> str | None:
    """The time a record starts with, as written there, or None for an undated record."""
    found = _TIMESTAMP.match(record)
    return found.group(0) if found else None


@dataclass(frozen=True)
class Observation:
    """A verified evidence record, quoted verbatim with its time and source: harness words only.

    Fallbacks publish these instead of the model's statements (design §10.1): where no judge
    ruled on a statement, the reader gets the records the statement rested on, nothing the
    model wrote. ``record`` is a whole line of the tool's result (or, for a line longer than
    :data:`MAX_RECORD`, the cited excerpt of it); ``at`` is the time it starts with.
    """

    reference: str
    tool: str
    scope: str
    record: str

    @property
    def at(self) -> str | None:
        """The time the record starts with, or None."""
        return record_time(self.record)

    @property
    def text(self) -> str:
        """The observation in the harness's words."""
        source = f"{self.tool} ({self.scope})" if self.scope else self.tool
        when = f"At {self.at}, " if self.at else "Undated: "
        return f'{when}{source} returned "{self.record}"'

    def to_json(self) -> dict[str, Any]:
        """The observation as stored, with its text as published."""
        return {
            "text": self.text,
            "reference": self.reference,
            "tool": self.tool,
            "scope": self.scope,
            "at": self.at,
            "record": self.record,
        }


def record_of(excerpt: str, content: str) -> str:
    """The record(s) of ``content`` (normalised) an excerpt quotes, or the excerpt itself.

    The first line of at most :data:`MAX_RECORD` characters holding ``excerpt``; for an excerpt
    spanning short lines, those whole lines joined (so it is dated by the record it starts in,
    never by a time written inside one); otherwise (a longer line) the excerpt.
    """
    lines = _lines(content)
    for line in lines:
        if len(line) <= MAX_RECORD and occurs(excerpt, line):
            return line
    return _short_run(excerpt, lines) or normalise(excerpt)


def _short_run(excerpt: str, lines: list[str]) -> str | None:
    """The first short lines in a row (two or more) holding ``excerpt``, joined, or None."""
    for first in range(len(lines)):
        for last in range(first + 1, len(lines)):
            run = lines[first : last + 1]
            if len(run[-1]) > MAX_RECORD or len(run[0]) > MAX_RECORD:
                break
            if occurs(excerpt, " ".join(run)):
                return " ".join(run)
    return None


def is_record(record: str, content: str) -> bool:
    """Whether ``record`` is what :func:`record_of` quotes from ``content`` for some excerpt.

    A whole short line, whole short lines in a row, or a part of the content that neither a
    short line nor short lines in a row hold (it quotes a longer line).
    """
    lines = _lines(content)
    short = [line for line in lines if len(line) <= MAX_RECORD]
    if record in short or _joins_lines(record, lines):
        return True
    held = any(occurs(record, line) for line in short) or _short_run(record, lines) is not None
    return occurs(record, content) and not held


def _joins_lines(record: str, lines: list[str]) -> bool:
    """Whether ``record`` is two or more whole short lines of ``lines`` in a row, joined."""
    for first, line in enumerate(lines):
        if len(line) > MAX_RECORD or not record.startswith(line + " "):
            continue
        for last in range(first + 1, len(lines)):
            if len(lines[last]) > MAX_RECORD:
                break
            if " ".join(lines[first : last + 1]) == record:
                return True
    return False


def _lines(content: str) -> list[str]:
    return [line for line in map(normalise, content.splitlines()) if line]


def observations(
    citations: Iterable[Citation], resolve: Callable[[str], tuple[str, str, str] | None]
) -> tuple[Observation, ...]:
    """One observation per record the citations proved from, in time order (undated last).

    ``resolve`` gives a reference's tool, scope and evidence content, or None when it proves
    nothing (then the citation is left out: only proven records are observed).
    """
    found: dict[tuple[str, str], Observation] = {}
    for citation in citations:
        source = resolve(citation.reference)
        if source is None:
            continue
        tool, scope, content = source
        record = record_of(citation.excerpt, content)
        found.setdefault(
            (citation.reference, record), Observation(citation.reference, tool, scope, record)
        )
    return in_time_order(found.values())


def in_time_order(items: Iterable[Observation]) -> tuple[Observation, ...]:
    """Dated records by their instant, then undated ones, each group in the order given."""
    return tuple(sorted(items, key=_when))


def facts_in_time_order(
    facts: Iterable[Fact], content: Callable[[str], str | None]
) -> tuple[Fact, ...]:
    """Facts by the earliest record they cite (undated last), each group in the order given.

    ``content`` gives a reference's evidence content, or None when it proves nothing. A reader
    of a report follows what happened in the order it happened, whichever model wrote it.
    """

    def earliest(fact: Fact) -> datetime:
        found = [
            _instant(record_time(record_of(c.excerpt, text)))
            for c in fact.citations
            if (text := content(c.reference)) is not None
        ]
        return min(found, default=_NEVER)

    return tuple(sorted(facts, key=earliest))


_NEVER = datetime.max.replace(tzinfo=UTC)


def _when(observation: Observation) -> datetime:
    """The record's instant (a time without an offset read as UTC); undated ones last."""
    return _instant(observation.at)


def _instant(at: str | None) -> datetime:
    """An ISO 8601 time as an instant (UTC when it has no offset); None or unreadable: last."""
    if at is None:
        return _NEVER
    try:
        instant = datetime.fromisoformat(at)
    except ValueError:  # e.g. an hour of 24: out of order rather than refused
        return _NEVER
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)
