"""What an MCP tool's call becomes for the harness: a canonical scope and bounded evidence.

The arguments of a call are its scope, written as sorted compact JSON so the same question is
recognised as a repeat. A result becomes evidence lines and notes: text lines, or structured
content as JSON when there is no text, kept up to the tool's byte limit. What the harness says
about a result (a record cut short, bytes not shown, an image not inlined) goes to the notes,
never into the lines: a citation can quote only records the tool returned.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from domain.tokens import inside_a_token

if TYPE_CHECKING:
    from mcp_types import CallToolResult, ContentBlock

    from application.ports import JSON

MAX_SCOPE_CHARS = 1000
"""The longest canonical scope; a longer one is cut and ends with a digest of the whole."""
MAX_ERROR_CHARS = 500
"""The longest error text kept from a tool or its server."""


def canonical_scope(arguments: JSON) -> str:
    """Sorted compact JSON; beyond MAX_SCOPE_CHARS, a prefix and a digest of the whole."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(text) <= MAX_SCOPE_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[: MAX_SCOPE_CHARS - 40]}… sha256:{digest}"


class _Lines:
    """Lines kept up to a byte limit; once one does not fit, the rest is only counted.

    What the harness says about the result (a record cut short, bytes not shown, content not
    inlined) goes to ``notes``, never into the records: a citation can quote only records.
    """

    def __init__(self, limit: int) -> None:
        """Keep lines up to ``limit`` bytes (at least 64, room for the start of one record)."""
        self.limit = max(limit, 64)
        self.kept: list[str] = []
        self.notes: list[str] = []
        self.used = 0
        self.skipped = 0
        """Bytes of content not shown (counted once the limit is reached)."""

    def add(self, line: str) -> None:
        """Keep ``line`` if it fits; else count it, or keep the start of a first line too long."""
        size = len(line.encode("utf-8", "surrogatepass")) + 1
        if not self.skipped and self.used + size <= self.limit:
            self.kept.append(line)
            self.used += size
        elif not self.used:
            self._cut_first(line, size)
        else:
            self.skipped += size

    def _cut_first(self, line: str, size: int) -> None:
        """One huge first line: keep its start in whole tokens, and say so in a note."""
        start = _start_of(line, self.limit - 48)
        if start:
            self.kept.append(start)
        shown = len(start.encode("utf-8", "surrogatepass"))
        self.notes.append(f"[the first record was cut to {shown} of {size - 1} bytes]")
        self.used = self.limit

    def result(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The lines kept, and the notes (with the bytes not shown, if any were left out)."""
        note = f"[{self.skipped} more bytes of the result not shown]"
        notes = (*self.notes, note) if self.skipped else tuple(self.notes)
        return tuple(self.kept), notes


def _start_of(line: str, limit: int) -> str:
    """The whole tokens ``line`` starts with in ``limit`` bytes: a cut token proves nothing."""
    end = used = 0
    for char in line:
        used += len(char.encode("utf-8", "surrogatepass"))
        if used > limit:
            break
        end += 1
    while end > 0 and inside_a_token(line, end):
        end -= 1
    return line[:end].rstrip()


def project(result: CallToolResult, limit: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Evidence lines of a result and notes about it: text lines, or structured content as JSON.

    Structured content is shown only when there is no text: a server that sends both sends the
    same data twice (the MCP specification asks it to serialise the structure as text too).
    Images, audio and resources are never inlined: a note describes each.
    """
    lines = _Lines(limit)
    texts = 0
    for block in result.content:
        if block.type != "text":
            lines.notes.append(describe(block))
            continue
        texts += 1
        if lines.skipped:  # full already: count the block, do not split it
            lines.skipped += len(block.text.encode("utf-8", "surrogatepass")) + 1
            continue
        for line in block.text.splitlines():
            lines.add(line)
    if result.structured_content is not None and not texts:
        structured = json.dumps(
            result.structured_content, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        lines.add(structured)
    return lines.result()


def describe(block: ContentBlock) -> str:
    """A one-line description of content that is never inlined (images, audio, resources)."""
    kind: str = block.type
    data: Any = getattr(block, "data", None)
    if kind in ("image", "audio") and isinstance(data, str):
        mime = getattr(block, "mime_type", "?")
        return f"[{kind} {mime}, about {len(data.rstrip('=')) * 3 // 4} bytes, not shown]"
    if kind == "resource":
        inner = block.resource  # type: ignore[union-attr]
        body = str(getattr(inner, "text", None) or getattr(inner, "blob", ""))
        mime = inner.mime_type or "unknown type"
        return f"[resource {str(inner.uri)[:200]} ({mime}), {len(body)} characters, not shown]"
    if kind == "resource_link":
        uri = str(getattr(block, "uri", ""))[:200]
        return f"[resource link {uri} ({getattr(block, 'mime_type', None) or 'unknown type'})]"
    return f"[{kind[:40]} content, not shown]"


def error_texts(content: list[ContentBlock]) -> list[str]:
    """The text blocks of an error result, each cut to :data:`MAX_ERROR_CHARS`."""
    return [block.text[:MAX_ERROR_CHARS] for block in content if block.type == "text"]
