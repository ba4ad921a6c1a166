"""The offline model's reading of when a question is about, against a reference clock.

An explicit date (``2026-11-29``, with ``between 10:00 and 12:00`` or ``from 15:00``) is taken as
written. A relative time is resolved against the reference time the harness states in the agent
prompt (``HARNESS_REFERENCE_TIME``; the sample data's own "now" by default), so "yesterday" means
the same day whichever model is asked: ``yesterday``, ``today``, ``this morning`` /
``afternoon`` / ``evening``, ``tonight``, ``last night``, ``right now`` (the hour before), the
``last N hours``, ``N days ago`` (``the day before yesterday``). "The same day" is the day of the
session's previous window, "the same window" (time, period) that window itself; with none, it
cannot be resolved and the run asks for a window instead of guessing, as for a date that does
not exist (``2026-11-31``). All times are UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_DATE = re.compile(r"\b(\d{4}-\d\d-\d\d)\b")
_CLOCK = re.compile(r"\b(\d{1,2}):(\d\d)\b")
_FROM = re.compile(r"\b(?:from|since|after)\s+(\d{1,2}):(\d\d)\b", re.IGNORECASE)
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?Z")
_HOURS = re.compile(r"\b(?:last|past)\s+(\d{1,3})\s+hours?\b", re.IGNORECASE)
_SAME_DAY = re.compile(r"\b(?:same|that)\s+day\b", re.IGNORECASE)
_SAME_WINDOW = re.compile(
    r"\b(?:same|that)\s+(?:window|time|period|hours?|interval)\b", re.IGNORECASE
)
_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_DAYS_AGO = re.compile(
    rf"\b(\d{{1,2}}|{'|'.join(_COUNTS)}|a)\s+days?\s+ago\b|\bday\s+before\s+yesterday\b",
    re.IGNORECASE,
)
_DAY = timedelta(days=1)
_HOUR = timedelta(hours=1)
LOOK_BACK = timedelta(days=3)
"""How far before the reference time a question that names no time is looked at."""

# Phrase -> (days from today's midnight, start hour, end hour); checked in this order.
_PARTS_OF_DAYS: tuple[tuple[str, int, int, int], ...] = (
    (r"last\s+night", -1, 18, 30),
    (r"yesterday", -1, 0, 24),
    (r"this\s+morning", 0, 0, 12),
    (r"this\s+afternoon", 0, 12, 18),
    (r"this\s+evening|tonight", 0, 18, 24),
    (r"today", 0, 0, 24),
)
_NOW = re.compile(
    r"\b(?:right\s+now|now|currently|at\s+the\s+moment|at\s+present|(?:last|past)\s+hour)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Window:
    """A resolved window ``[start, end)`` in UTC and the words of the question that set it."""

    start: datetime
    end: datetime
    said: str


@dataclass(frozen=True)
class Unresolved:
    """A relative time the question uses that nothing resolves (the run asks for a window)."""

    said: str


def resolve(question: str, now: datetime, previous: Window | None = None) -> Window | Unresolved:
    """When ``question`` is about: a window, or the phrase that could not be resolved.

    A question that names no time is about the :data:`LOOK_BACK` before ``now``.
    """
    explicit = _explicit(question)
    if explicit is not None:
        return explicit
    same = _SAME_WINDOW.search(question) or _SAME_DAY.search(question)
    if same:
        if previous is None:
            return Unresolved(same.group(0))
        if _SAME_WINDOW.fullmatch(same.group(0)):
            return Window(previous.start, previous.end, same.group(0))
        day = _midnight(previous.start)
        return Window(day, day + _DAY, same.group(0))
    return _relative(question, now) or Window(now - LOOK_BACK, now, "")


def previous_window(context: str) -> Window | None:
    """The window a previous answer states (its first two UTC times), or None."""
    stamps = _STAMP.findall(context)
    if len(stamps) < 2:
        return None
    start, end = (datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps[:2])
    return Window(start, end, "previous") if start < end else None


def _explicit(question: str) -> Window | Unresolved | None:
    day = _DATE.search(question)
    if not day:
        return None
    try:
        base = datetime.fromisoformat(day.group(1)).replace(tzinfo=UTC)
    except ValueError:  # 2026-11-31: no such day; asked for a window, never rounded to one
        return Unresolved(day.group(1))
    if not 1970 <= base.year <= 9998:  # 0001-01-01 or 9999-12-31: no window fits around it
        return Unresolved(day.group(1))
    times = _CLOCK.findall(question)
    if len(times) >= 2:
        (h1, m1), (h2, m2) = times[:2]
        start, end = _at(base, h1, m1), _at(base, h2, m2)
        if start < end:
            return Window(start, end, day.group(1))
    since = _FROM.search(question)
    if since:
        return Window(_at(base, *since.groups()), base + _DAY, day.group(1))
    return Window(base, base + _DAY, day.group(1))


def _relative(question: str, now: datetime) -> Window | None:
    today = _midnight(now)
    ago = _DAYS_AGO.search(question)  # before "yesterday": the day before yesterday holds it
    if ago:
        day = today - _days(ago.group(1)) * _DAY
        return Window(day, day + _DAY, ago.group(0))
    for pattern, days, first, last in _PARTS_OF_DAYS:
        found = re.search(rf"\b(?:{pattern})\b", question, re.IGNORECASE)
        if found:
            day = today + days * _DAY
            return Window(day + first * _HOUR, day + last * _HOUR, found.group(0))
    hours = _HOURS.search(question)
    if hours and int(hours.group(1)) > 0:
        return Window(now - int(hours.group(1)) * _HOUR, now, hours.group(0))
    found = _NOW.search(question)
    return Window(now - _HOUR, now, found.group(0)) if found else None


def _days(count: str | None) -> int:
    """How many days "N days ago" says (None: the day before yesterday's two)."""
    if count is None:
        return 2
    if count.isdigit():
        return int(count)
    return 1 if count.lower() == "a" else _COUNTS[count.lower()]


def _at(day: datetime, hour: str, minute: str) -> datetime:
    """``day`` at ``hour:minute``; an hour past 23 is the next day's (``24:00`` ends a day)."""
    return day + timedelta(hours=int(hour), minutes=min(int(minute), 59))


def _midnight(moment: datetime) -> datetime:
    moment = moment.astimezone(UTC)
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def utc(moment: datetime) -> str:
    """``2026-11-29T10:00:00Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
