"""Does a decoded event have the fields its class declares, with values of the declared types?

The transcoder rebuilds enums, dates and value objects but trusts the rest: an exported payload
edited into another shape (a number where text belongs, a missing field) would otherwise reach
the checks as a malformed event. Here it is a finding about that record instead.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from datetime import datetime
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints
from uuid import UUID

import domain.answer_rules
import domain.evals
import domain.grounding
import domain.release_states
import domain.states
import domain.tool_states
import domain.values

_NAMES: dict[str, Any] = {
    **vars(domain.states),
    **vars(domain.tool_states),
    **vars(domain.release_states),
    **vars(domain.values),
    **vars(domain.grounding),
    "RetrievedPassage": domain.answer_rules.RetrievedPassage,
    "AnswerRefusal": domain.answer_rules.AnswerRefusal,
    "Verdict": domain.evals.Verdict,
    "datetime": datetime,
    "UUID": UUID,
    "Any": Any,
    "ClassVar": ClassVar,
    "TAggregateID": UUID,
}
"""What the events' annotations name (several are imported only for type checking)."""


@functools.cache
def fields_of(cls: Any) -> dict[str, Any]:
    """The declared fields of an event or value class and their types (class variables aside)."""
    hints = get_type_hints(cls, globalns=_NAMES)
    return {name: hint for name, hint in hints.items() if get_origin(hint) is not ClassVar}


def shape_problem(cls: Any, state: dict[str, Any]) -> str | None:
    """What is wrong with the decoded fields of event class ``cls``, or None: all as declared."""
    declared = fields_of(cls)
    missing = sorted(set(declared) - set(state))
    if missing:
        return f"misses field(s) {', '.join(missing)}"
    unknown = sorted(set(state) - set(declared))
    if unknown:
        return f"has unknown field(s) {', '.join(unknown)}"
    for name, hint in declared.items():
        if not conforms(state[name], hint):
            return f"field {name!r} is not a {_name(hint)}: {state[name]!r:.60}"
    return None


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of type ``hint`` (unions, tuples, dicts and value objects included)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin in (Union, types.UnionType):
        return any(conforms(value, arg) for arg in args)
    if origin is tuple:
        return isinstance(value, tuple) and all(conforms(item, args[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            conforms(key, args[0]) and conforms(item, args[1]) for key, item in value.items()
        )
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return isinstance(value, hint) and all(
            conforms(getattr(value, name), field) for name, field in fields_of(hint).items()
        )
    return isinstance(value, hint)


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint)
