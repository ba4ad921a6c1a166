"""A bound on each request's head (request line and header fields), counted as its bytes arrive.

uvicorn sets none: its C parser (httptools) keeps a header's bytes until the header ends, so a
client sending a 100 MB header had the worker hold 100 MB (four at once took a worker from 112 MB
to 523 MB before the read clock cut them). Here the bytes of a head are counted *before* the
parser sees them, and the parser is given no more than the room left (:class:`HeadMeter`): a head
over ``HARNESS_MAX_HEADER_BYTES`` is answered ``431 Request Header Fields Too Large`` as soon as
that many bytes have come, and so is a request with more than ``HARNESS_MAX_HEADERS`` header
fields. Bodies are not heads: ``HARNESS_MAX_BODY_BYTES`` bounds them (``api.errors.BodyLimit``).

A head that begins in the same read as the end of the request before it (HTTP pipelining) is
counted from the next read on: httptools holds at most one read more than the limit. h11 keeps
pipelined requests unread until the answers before them are sent, and its own bound on what it
keeps, set to the same limit, cuts them then.

The limits are set by :func:`api.main.create_app` for the process (:func:`set_head_limits`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from api.errors import raw_problem
from infrastructure.settings import Settings


@dataclass(frozen=True)
class HeadLimits:
    """How large a request's head may be, and what a refusal says."""

    bytes: int
    fields: int

    def over_bytes(self) -> str:
        """Why a head over :attr:`bytes` is refused (naming the setting)."""
        return (
            f"the request's head (request line and header fields) is over {self.bytes} bytes"
            " (HARNESS_MAX_HEADER_BYTES)"
        )

    def over_fields(self) -> str:
        """Why a request with more than :attr:`fields` header fields is refused."""
        return f"the request has more than {self.fields} header fields (HARNESS_MAX_HEADERS)"


DEFAULT_LIMITS = HeadLimits(
    Settings.model_fields["max_header_bytes"].default,
    Settings.model_fields["max_headers"].default,
)
"""Until :func:`set_head_limits`: the settings' defaults (one source)."""


def too_large(why: str) -> bytes:
    """The whole ``431`` answer, a problem saying ``why``; the connection closes after it."""
    return raw_problem(431, f"request header fields too large: {why}")


class HeadMeter:
    """The bytes of the head now arriving on one connection, against :attr:`limits`."""

    limits: ClassVar[HeadLimits] = DEFAULT_LIMITS
    """Every connection's of this process (:func:`set_head_limits`)."""

    def __init__(self) -> None:
        """Nothing counted: the connection's first head comes next."""
        self.used = 0
        self.after: object = None
        """The cycle of the request the head being counted follows (None: the first head)."""

    def room(self, arriving: bool, cycle: object) -> int | None:
        """Bytes the parser may be given now, or None when no head is arriving (not counted).

        ``arriving`` says whether the parser is reading a head (not a body, nor requests it
        keeps for later); ``cycle`` is the protocol's latest request/response cycle: None before
        the first head has come whole, a new one once a head has, so the next head is counted
        from nothing.
        """
        if not arriving:
            return None
        if cycle is not self.after:
            self.after, self.used = cycle, 0
        return self.limits.bytes - self.used


def set_head_limits(limits: HeadLimits) -> None:
    """The limits of every request head this process reads from now on."""
    HeadMeter.limits = limits
