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
    from collections.abc import Callable, Iterable, Iterator

    from domain.grounding import Citation

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
    """The first record (line, normalised) of ``content`` holding ``excerpt``, or the excerpt.

    The excerpt itself when no line of at most :data:`MAX_RECORD` characters holds it (it spans
    lines, or its line is too long to quote whole).
    """
    for line in _short_lines(content):
        if occurs(excerpt, line):
            return line
    return normalise(excerpt)


def is_record(record: str, content: str) -> bool:
    """Whether ``record`` is what :func:`record_of` quotes from ``content`` for some excerpt.

    A whole short line of it, or a part of it that occurs in no short line.
    """
    lines = list(_short_lines(content))
    if record in lines:
        return True
    return occurs(record, content) and not any(occurs(record, line) for line in lines)


def _short_lines(content: str) -> Iterator[str]:
    for line in content.splitlines():
        line = normalise(line)
        if line and len(line) <= MAX_RECORD:
            yield line


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


_NEVER = datetime.max.replace(tzinfo=UTC)


def _when(observation: Observation) -> datetime:
    """The record's instant (a time without an offset read as UTC); undated ones last."""
    at = observation.at
    if at is None:
        return _NEVER
    try:
        instant = datetime.fromisoformat(at)
    except ValueError:  # e.g. an hour of 24: out of order rather than refused
        return _NEVER
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)
