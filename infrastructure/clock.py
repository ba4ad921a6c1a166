"""The wall clock: the Clock port as the service reads the time."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    """The wall clock, timezone-aware."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)
