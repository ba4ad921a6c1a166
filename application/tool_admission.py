"""Which tools the agent may use, as data: every tool is admitted (and how) or refused (and why).

One function, :func:`admission_of`, decides for every tool of every source; the start-up summary,
``harness tools list``, ``GET /v1/tools``, the tools offered to the model and the boundary's
preflight all read its answer, so they cannot disagree. A tool that speaks for itself (an MCP
tool, from its server's annotations) carries an ``admission`` of its own; any other tool is
admitted when its ``read_only`` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from application.ports import Tool

VALID_NAME = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
"""A function name every model provider accepts (OpenAI's rule; a dot is refused by some)."""


class AdmittedBy(StrEnum):
    """Whose word admits a tool."""

    READ_ONLY = "read-only"
    """The tool (or its server's annotations) says it is read-only."""
    ALLOW_NOT_READ_ONLY = "allow_not_read_only"
    """The operator's configuration admits it although it does not say so (recorded per call)."""


class Refusal(StrEnum):
    """Why a tool is refused: it is never offered to the model, and never called."""

    NOT_ANNOTATED = "not annotated"
    """An MCP tool without ``readOnlyHint``."""
    READ_ONLY_HINT_FALSE = "readOnlyHint false"
    DESTRUCTIVE = "destructive"
    """``destructiveHint: true`` (also with ``readOnlyHint: true``: a contradiction, at worst)."""
    NOT_READ_ONLY = "not read-only"
    """A built-in, plugin or scripted tool whose ``read_only`` is False."""
    NOT_LISTED = "not listed"
    """The MCP server no longer lists the tool (it was listed at start)."""
    NAME_CLASH = "name clash"
    """An earlier source already offers the name (the first keeps it)."""
    INVALID_NAME = "invalid name"
    """Not 1 to 64 letters, digits, ``_`` or ``-`` (a newline, markup or 5,000 characters)."""
    SCHEMA = "bad schema"
    """An MCP tool's schema cannot be checked safely: not a JSON schema, a reference outside
    itself (a URL, a file) or one that does not resolve, too large or too deep."""


@dataclass(frozen=True)
class Admission:
    """Admitted ``by`` someone's word, or refused with a ``refusal``; why, and the remedy, in words.

    ``why`` says what the tool's own word was (``the server says readOnlyHint: false``);
    ``remedy`` names the setting that would admit a refused tool, when one would.
    """

    by: AdmittedBy | None = None
    refusal: Refusal | None = None
    why: str = ""
    remedy: str = ""

    @property
    def admitted(self) -> bool:
        """Whether the tool may be offered and called."""
        return self.refusal is None

    def rejection(self, name: str) -> str:
        """The preflight's one line when the model asks for this refused tool anyway."""
        verb = "is not read-only" if self.refusal in _NOT_READ_ONLY else "is refused"
        text = f"{name} {verb} ({self.why})" if self.why else f"{name} {verb}"
        return f"{text}; to admit it anyway {self.remedy}" if self.remedy else text

    def words(self) -> str:
        """``admitted (read-only)`` or ``refused (readOnlyHint false)``: for tables and logs."""
        if self.refusal is None:
            return f"admitted ({(self.by or AdmittedBy.READ_ONLY).value})"
        return f"refused ({self.refusal.value})"


READ_ONLY = Admission(AdmittedBy.READ_ONLY)
_NOT_READ_ONLY = frozenset(Refusal) - {
    Refusal.NOT_LISTED,
    Refusal.NAME_CLASH,
    Refusal.INVALID_NAME,
    Refusal.SCHEMA,
}
SHOWN_NAME_CHARS = 80
"""The most of a refused name any view shows (a server may send 5,000 characters)."""


def shown_name(name: str) -> str:
    """``name`` as every view shows it: as it is when valid, else quoted, escaped and cut.

    An invalid name may hold a newline, markup or thousands of characters: ``ascii`` spells out
    every control and non-ASCII character, so the shown form is one line of at most
    SHOWN_NAME_CHARS characters (markup stays text: every view prints it as text).
    """
    if VALID_NAME.match(name):
        return name
    quoted = ascii(name)
    return quoted if len(quoted) <= SHOWN_NAME_CHARS else f"{quoted[: SHOWN_NAME_CHARS - 1]}…"


def admission_of(tool: Tool, clash: str | None = None) -> Admission:
    """The admission of ``tool``; ``clash`` names the source that already offers its name."""
    if not VALID_NAME.match(tool.name):
        why = "model providers take 1 to 64 letters, digits, _ or - as a name"
        return Admission(refusal=Refusal.INVALID_NAME, why=why)
    if clash is not None:
        origin = str(getattr(tool, "origin", "builtin"))
        why = f"{clash} already offers {tool.name}"
        remedy = f"give {origin} a prefix" if origin.startswith("mcp:") else ""
        return Admission(refusal=Refusal.NAME_CLASH, why=why, remedy=remedy)
    own = getattr(tool, "admission", None)
    if isinstance(own, Admission) and (tool.read_only or not own.admitted):
        return own
    if tool.read_only:
        return READ_ONLY
    return Admission(refusal=Refusal.NOT_READ_ONLY, why="the tool says read_only is false")


def admitted(tools: Iterable[Tool]) -> list[Tool]:
    """The tools that may be offered to the model, in their order."""
    return [tool for tool in tools if admission_of(tool).admitted]
