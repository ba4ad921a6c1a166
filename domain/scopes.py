"""How a tool call's scope is shown to a reader: the harness's words, never the model's.

A call's arguments are the model's text: a search phrase, a service name, any key a loose tool
schema lets through. Published verbatim in a fallback ("no logs containing '…'", "… could not be
checked for …") or on a terminal line, they would let a model say anything unjudged (design
§10.1). So a scope is shown as its fields, each value verbatim only when the harness can vouch
for it, and otherwise by its length alone (``‹37 characters›``):

- a service the question names or the run's tools know (:func:`domain.published.names_service`);
- an ISO 8601 time, a number, ``true``/``false``/``null``, or an upper-case level (``ERROR``);
- one plain word or identifier (letters and digits, joined by ``_``, at most 32 characters,
  e.g. ``timeout`` or ``latency_p99``), which reads as a name, not a sentence;
- a value every word of which the question holds (the operator's own words).

A field's name is shown when it is a plain lower-case identifier, by its length otherwise.
The canonical scopes the tools record are ``key=value;…`` (the built-in tools) or a JSON object
(scripted and MCP tools); anything else is one value.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from domain.published import SERVICE_PATTERN, names_service

if TYPE_CHECKING:
    from collections.abc import Iterable

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")
_NUMBER = re.compile(r"-?\d{1,15}(\.\d{1,6})?")
_LEVEL = re.compile(r"[A-Z][A-Z_]{0,19}")
_PLAIN_WORD = re.compile(r"(?=.{1,32}$)[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*")
_KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")
_WORD = re.compile(r"\w+")


def shown_scope(scope: str, question: str, known: Iterable[str]) -> str:
    """``scope`` as a reader sees it: ``service=checkout, contains=‹37 characters›``."""
    if not scope:
        return ""
    services = tuple(known)
    fields = _fields(scope)
    if fields is None:
        return _value(scope, question, services)
    return ", ".join(f"{_key(key)}={_value(value, question, services)}" for key, value in fields)


_COVERS = re.compile(
    r"\bdata covers (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) to (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"
)


def covered_span(notes: Iterable[str]) -> tuple[str, str] | None:
    """The span a tool's notes say its data covers (two UTC times, nothing else), or None.

    Only the two times are taken from the tool's note; the harness words the rest.
    """
    for note in notes:
        found = _COVERS.search(note)
        if found:
            return found.group(1), found.group(2)
    return None


def measured(text: str) -> str:
    """A text a reader is not shown, by its length alone."""
    return f"‹{len(text)} characters›"


def _fields(scope: str) -> list[tuple[str, str]] | None:
    """The scope's fields, or None when it is one value."""
    try:
        data: Any = json.loads(scope)
    except ValueError:
        data = None
    if isinstance(data, dict):
        return [(str(k), _json_value(v)) for k, v in data.items()]
    if "=" in scope and ";" in scope or scope.count("=") == 1:
        pairs = [part.partition("=") for part in scope.split(";")]
        if all(sep for _, sep, _ in pairs):
            return [(key, value) for key, _, value in pairs]
    return None


def _json_value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _key(key: str) -> str:
    return key if _KEY.fullmatch(key) else measured(key)


def _value(value: str, question: str, known: tuple[str, ...]) -> str:
    return value if _vouched(value, question, known) else measured(value)


def _vouched(value: str, question: str, known: tuple[str, ...]) -> bool:
    """Whether the harness can show ``value`` without publishing the model's words."""
    if value in ("true", "false", "null") or value in known:
        return True
    if any(p.fullmatch(value) for p in (_TIME, _NUMBER, _LEVEL, _PLAIN_WORD)):
        return True
    if _looks_like_a_service(value) and names_service(value, question, known):
        return True
    words = _WORD.findall(value.casefold())
    asked = set(_WORD.findall(question.casefold()))
    return bool(words) and len(value) <= 200 and all(w in asked for w in words)


def _looks_like_a_service(value: str) -> bool:
    return re.match(SERVICE_PATTERN, value) is not None
