"""What a model or a tool hands the harness, made into text the log and the read side can hold.

A model may answer anything, and a tool adapter may hand back anything; both are recorded as
events. The log stores UTF-8, which cannot encode a lone surrogate (a model's JSON may well
escape one), and PostgreSQL text cannot hold NUL. So at the two boundaries every string is made
storable: each lone surrogate and each NUL becomes U+FFFD, and what is not a string where text is
expected is reported, never passed on. Everything else is kept exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from application.ports import ModelResponse, ToolCall, ToolOutput

if TYPE_CHECKING:
    from collections.abc import Sequence

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"
_SCALARS = frozenset({int, float, bool, type(None)})


class NotStorable(ValueError):
    """A value of the wrong type where text was expected, or nested too deeply to store."""


def storable_text(value: str) -> str:
    """``value`` with each lone surrogate and NUL replaced (always an exact ``str``)."""
    if type(value) is str and value.isascii() and "\x00" not in value:
        return value  # no surrogate in ASCII: what the substitution gives back for no match
    return _UNSTORABLE.sub(REPLACEMENT, value)


def storable_json(value: Any) -> Any:
    """A JSON value with every string in it (keys too) made storable.

    Raises :class:`NotStorable` when it is nested deeper than Python can walk.
    """
    try:
        return _json(value)
    except RecursionError:
        raise NotStorable("nested too deeply") from None


def _json(value: Any) -> Any:
    if type(value) in _SCALARS:  # most of a JSON value: no string in it to make storable
        return value
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, Mapping):
        return {_json(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value


def storable_response(response: ModelResponse) -> ModelResponse:
    """The model's answer with storable text, tool names and arguments.

    Arguments nested too deeply to store become raw text, which the tool boundary rejects.
    """
    return replace(
        response,
        text=storable_text(response.text),
        tool_calls=tuple(_call(c) for c in response.tool_calls),
        finish_reason=storable_text(response.finish_reason),
    )


def _call(call: ToolCall) -> ToolCall:
    raw = None if call.raw_arguments is None else storable_text(call.raw_arguments)
    try:
        arguments = storable_json(call.arguments)  # an object, or what the tool will refuse
    except NotStorable:
        arguments, raw = {}, "(arguments nested too deeply)"
    return ToolCall(storable_text(call.id), storable_text(call.name), arguments, raw)


def storable_output(output: object) -> ToolOutput:
    """A tool's result with storable records and scope; :class:`NotStorable` if malformed."""
    if not isinstance(output, ToolOutput):
        raise NotStorable(f"the tool answered {type(output).__name__}, not ToolOutput")
    lines: Sequence[object] = output.lines
    if isinstance(lines, str | bytes) or not isinstance(lines, list | tuple):
        raise NotStorable(f"its records are {type(lines).__name__}, not a list of text")
    if not all(isinstance(line, str) for line in lines):
        kinds = sorted({type(line).__name__ for line in lines if not isinstance(line, str)})
        raise NotStorable(f"its records include {', '.join(kinds)}, not only text")
    if not isinstance(output.scope_description, str):
        kind = type(output.scope_description).__name__
        raise NotStorable(f"its scope description is {kind}, not text")
    notes: Sequence[object] = output.notes
    if isinstance(notes, str | bytes) or not isinstance(notes, list | tuple):
        raise NotStorable(f"its notes are {type(notes).__name__}, not a list of text")
    if not all(isinstance(note, str) for note in notes):
        raise NotStorable("its notes include something other than text")
    if type(output.redactions) is not int or output.redactions < 0:
        raise NotStorable(f"its redaction count is {output.redactions!r}, not a count")
    return ToolOutput(
        tuple(storable_text(line) for line in lines),
        storable_text(output.scope_description),
        tuple(storable_text(str(note)) for note in notes),
        output.redactions,
    )
