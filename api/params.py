"""The types of request values that reach SQL, checked once at the door (a 422 when wrong).

A value the stores cannot hold (PostgreSQL text refuses NUL) or a time that does not exist in
UTC must never get as far as the database: there it would be answered as an outage (503) on
one store and not on the other. Every route takes session ids and times through these types.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, StringConstraints

from domain.values import MAX_SESSION_ID, SESSION_ID_PATTERN

SessionId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_SESSION_ID, pattern=SESSION_ID_PATTERN)
]
"""A session id wherever a request names one: a letter or digit, then letters, digits, ``._:@-``."""


PageCursor = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_-]+$")
]
"""A listing's ``next_cursor`` handed back: URL-safe base64 without padding (what the listing
gives); anything else is refused at the door. One of that shape the listing did not give is a 400
from the route, which decodes it."""


def as_utc(value: datetime) -> datetime:
    """A time in UTC; a naive one is taken as UTC (SQLite hands stored times back naive)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _in_utc(value: datetime) -> datetime:
    """``value`` in UTC; refused when UTC cannot hold it (e.g. 0001-01-01T00:00+01:00)."""
    try:
        return as_utc(value)
    except OverflowError:
        raise ValueError("is out of range once converted to UTC (years 1 to 9999)") from None


UtcTime = Annotated[datetime, AfterValidator(_in_utc)]
"""A time a request gives (RFC 3339; without an offset, UTC), as UTC."""
