"""Validation and canonical form of the ops tools' arguments (the ``normalized_scope``).

The harness treats ``tool_name + normalized_scope`` as the identity of a call (an exact repeat
gains nothing), so semantically equal arguments must give identical strings and different ones
different strings: services are lower-cased, times become UTC ``…Z``, optional filters left out or
``null`` are omitted, defaults are filled in, and filters are sorted by name after the fixed
``service;start;end`` prefix. Values are escaped so a ``;`` or ``=`` inside one cannot forge
another.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from application.ports import ToolArgumentsError

MAX_LIMIT = 500
LOG_LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
_LEVEL_ALIASES = {"WARNING": "WARN", "ERR": "ERROR"}
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_MAX_CONTAINS = 200

FilterParser = Callable[[str, object], str | None]
"""Turns one filter's raw value into its canonical text (None: absent) or raises."""


@dataclass(frozen=True)
class ScopeRules:
    """What one tool accepts: whether ``service`` is required, its filters and the default limit."""

    tool: str
    service_required: bool
    filters: Mapping[str, FilterParser] = field(default_factory=dict)
    required_filters: frozenset[str] = frozenset()
    default_limit: int = 50

    @property
    def accepted(self) -> tuple[str, ...]:
        """Every argument name the tool accepts, sorted."""
        return tuple(sorted({"service", "start", "end", "limit", *self.filters}))


@dataclass(frozen=True)
class OpsScope:
    """Validated arguments: service (None: every service), window ``[start, end)``, filters."""

    service: str | None
    start: datetime
    end: datetime
    filters: tuple[tuple[str, str], ...]
    limit: int

    def get(self, name: str) -> str | None:
        """A filter's canonical value, or None when it is absent."""
        return dict(self.filters).get(name)

    def canonical(self) -> str:
        """``service=…;start=…;end=…`` then the filters and ``limit`` sorted by name."""
        head = [("service", self.service or "*"), ("start", utc_text(self.start))]
        head.append(("end", utc_text(self.end)))
        tail = sorted([*self.filters, ("limit", str(self.limit))])
        return ";".join(f"{name}={_escape(value)}" for name, value in head + tail)

    def window(self) -> str:
        """The scope's service and time window in words."""
        who = f"for {self.service}" if self.service else "for every service"
        return f"{who} between {utc_text(self.start)} and {utc_text(self.end)} (end exclusive)"


def parse_scope(rules: ScopeRules, arguments: object) -> OpsScope:
    """Validate ``arguments`` against ``rules``; every error names the offending field."""
    if not isinstance(arguments, Mapping):
        raise ToolArgumentsError(f"arguments: {rules.tool} takes a JSON object of named arguments")
    unknown = sorted(str(key) for key in arguments if key not in rules.accepted)
    if unknown:
        raise ToolArgumentsError(
            f"{unknown[0]}: not an argument of {rules.tool}; it accepts {', '.join(rules.accepted)}"
        )
    start = parse_time("start", arguments.get("start"))
    end = parse_time("end", arguments.get("end"))
    if start >= end:
        raise ToolArgumentsError(
            f"end: must be later than start (start={utc_text(start)}, end={utc_text(end)})"
        )
    return OpsScope(
        service=_service(rules, arguments.get("service")),
        start=start,
        end=end,
        filters=_filters(rules, arguments),
        limit=_limit(rules, arguments.get("limit")),
    )


def _filters(rules: ScopeRules, arguments: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    for name, parser in sorted(rules.filters.items()):
        value = parser(name, arguments.get(name))
        if value is None and name in rules.required_filters:
            raise ToolArgumentsError(f"{name}: required by {rules.tool}")
        if value is not None:
            found.append((name, value))
    return tuple(found)


def _service(rules: ScopeRules, value: object) -> str | None:
    if value is None and rules.service_required:
        raise ToolArgumentsError(
            f"service: required by {rules.tool}, a service name such as 'checkout'"
        )
    if value is None or (value == "*" and not rules.service_required):
        return None  # every service
    return parse_name("service", value)


def _limit(rules: ScopeRules, value: object) -> int:
    if value is None:
        return rules.default_limit
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ToolArgumentsError(f"limit: must be an integer from 1 to {MAX_LIMIT}, got {value!r}")
    return value


def parse_time(name: str, value: object) -> datetime:
    """An ISO 8601 time as aware UTC; a time without an offset is taken as UTC."""
    if value is None:
        raise ToolArgumentsError(f"{name}: required, an ISO 8601 time such as 2026-11-29T10:00:00Z")
    try:
        if not isinstance(value, str):
            raise TypeError(type(value).__name__)
        parsed = datetime.fromisoformat(value.strip().upper())
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (TypeError, ValueError, OverflowError):
        raise ToolArgumentsError(
            f"{name}: cannot read {value!r} as an ISO 8601 time such as 2026-11-29T10:00:00Z"
        ) from None


def parse_name(name: str, value: object) -> str:
    """A service or metric name, case-normalised: lower-case letters, digits, ``_ . -``."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text is None or not _NAME.fullmatch(text):
        raise ToolArgumentsError(
            f"{name}: must be a name of lower-case letters, digits, '_', '.' or '-', got {value!r}"
        )
    return text


def parse_level(name: str, value: object) -> str | None:
    """A log level (``warning`` is ``WARN``); None when absent."""
    if value is None:
        return None
    text = value.strip().upper() if isinstance(value, str) else ""
    text = _LEVEL_ALIASES.get(text, text)
    if text not in LOG_LEVELS:
        raise ToolArgumentsError(f"{name}: must be one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return text


def parse_contains(name: str, value: object) -> str | None:
    """Case-insensitive substring filter, lower-cased and trimmed; blank means no filter."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > _MAX_CONTAINS:
        raise ToolArgumentsError(f"{name}: must be text of at most {_MAX_CONTAINS} characters")
    return value.strip().lower() or None


def parse_metric(name: str, value: object) -> str | None:
    """A metric name such as ``latency_p99_ms``; None when absent."""
    return None if value is None else parse_name(name, value)


def utc_text(moment: datetime) -> str:
    """``2026-11-29T10:00:00Z``; fractions of a second only when present."""
    moment = moment.astimezone(UTC)
    spec = "microseconds" if moment.microsecond else "seconds"
    return moment.isoformat(timespec=spec)[:-6] + "Z"  # "+00:00" cut: cheaper than a replace


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace(";", "%3B").replace("=", "%3D")
