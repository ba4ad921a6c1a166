"""A tool server's messages cut into lines of bounded size before anything parses them.

MCP over stdio is one JSON-RPC message a line. :class:`BoundedLines` splits the bytes as they
arrive and keeps at most ``limit`` bytes of a line; a longer line is skipped while it streams (only
its first and last few hundred bytes are kept, never the rest) and comes out as an
:class:`Oversized`. :func:`too_large` turns that into a JSON-RPC error for the request it
answered, when its head or tail names an ``"id"``, so the call fails at once with SIZE.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import mcp_types as types

TOO_LARGE = -32090
"""The harness's own JSON-RPC error code (the server-error range) for a message not read."""
NOT_READ = "(max_message_bytes); not read"
KEPT = 512
"""Bytes kept of an oversized line's start and of its end: where a JSON-RPC ``"id"`` sits."""
_ID = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,18}|"[^"\\]{0,200}")')


@dataclass(frozen=True)
class Oversized:
    """A line over the limit, skipped: its start, its end and its size."""

    head: bytes
    tail: bytes
    size: int


class BoundedLines:
    """Split a byte stream at newlines, keeping at most ``limit`` bytes of any one line."""

    def __init__(self, limit: int) -> None:
        """Lines over ``limit`` bytes come out as :class:`Oversized`."""
        self.limit = limit
        self._line = bytearray()
        self._over: Oversized | None = None

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines ``chunk`` completes, in order (a partial last line waits for the next)."""
        done: list[bytes | Oversized] = []
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            self._take(piece)
            if end < 0:
                break
            done.append(self._over or bytes(self._line))
            self._line.clear()
            self._over = None
            start = end + 1
        return done

    def _take(self, piece: bytes) -> None:
        over = self._over
        if over is not None:
            tail = (over.tail + piece)[-KEPT:]
            self._over = Oversized(over.head, tail, over.size + len(piece))
        elif len(self._line) + len(piece) > self.limit:
            whole = bytes(self._line[:KEPT]) + piece[:KEPT]
            tail = (bytes(self._line[-KEPT:]) + piece)[-KEPT:]
            self._over = Oversized(whole[:KEPT], tail, len(self._line) + len(piece))
            self._line.clear()
        else:
            self._line += piece


def request_id(line: Oversized) -> int | str | None:
    """The ``"id"`` at the start of the line, else the last one at its end; None if neither."""
    found = _ID.search(line.head)
    if found is None:
        at_end = list(_ID.finditer(line.tail))
        found = at_end[-1] if at_end else None
    if found is None:
        return None
    try:
        value: int | str = json.loads(found.group(1))
    except ValueError:  # not UTF-8
        return None
    return value


def too_large_words(limit: int) -> str:
    """What a call whose answer was not read says (stdio and HTTP alike)."""
    return f"the server's answer was over {limit} bytes {NOT_READ}"


def too_large(line: Oversized, limit: int) -> types.JSONRPCError | None:
    """The error that fails the request ``line`` answered; None when it names no request."""
    ident = request_id(line)
    if ident is None:
        return None
    error = types.ErrorData(code=TOO_LARGE, message=too_large_words(limit))
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=error)
