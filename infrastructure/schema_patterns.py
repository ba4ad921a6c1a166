"""A tool schema's regular expressions, checked so that no argument can make them run for ever.

jsonschema checks ``pattern`` and ``patternProperties`` with Python's ``re``, a backtracking
engine that holds the interpreter lock while it matches: a pattern such as ``^(a+)+$`` takes
exponential time on ``aaaa…!``, and abandoning the thread that checks it frees nothing (every
thread of the worker, the event loop included, waits). So, at admission, a pattern is refused
(:func:`pattern_problem`) when it can backtrack without bound: a repetition inside a repetition,
an alternation inside a repetition, a back-reference, more than :data:`MAX_UNBOUNDED`
open-ended repetitions in all, or more than :data:`MAX_PATTERN_CHARS` characters. What is left
backtracks at most polynomially in the text's length, and the text a pattern is checked against
is bounded too (:func:`bounded`): a string (or property name) over :data:`MAX_MATCHED_CHARS`
is refused before any matching.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any

from jsonschema import ValidationError, validators

if TYPE_CHECKING:
    from collections.abc import Iterator

    from jsonschema.protocols import Validator

MAX_PATTERN_CHARS = 1000
MAX_UNBOUNDED = 3
"""Open-ended repetitions (``*``, ``+``, ``{n,}``) a pattern may hold in all."""
MAX_MATCHED_CHARS = 256
"""The longest string (or property name) checked against a schema's pattern."""
sre: Any = importlib.import_module("re._constants")  # the parser ``re`` itself uses (no stubs)
sre_parse: Any = importlib.import_module("re._parser")
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` could backtrack without bound, or None when it cannot."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"is {len(pattern)} characters (at most {MAX_PATTERN_CHARS})"
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as error:
        return f"is not a regular expression ({error})"
    unbounded = 0
    for op, av, inside_repeat in _walk(list(parsed), False):
        if op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            return "refers back to a group (it can backtrack without bound)"
        if op in _REPEATS and inside_repeat:
            return "repeats a repetition (it can backtrack without bound)"
        if op is sre.BRANCH and inside_repeat:
            return "repeats an alternation (it can backtrack without bound)"
        if op in _REPEATS and av[1] is sre.MAXREPEAT:
            unbounded += 1
    if unbounded > MAX_UNBOUNDED:
        return f"has {unbounded} open-ended repetitions (at most {MAX_UNBOUNDED})"
    return None


def patterns_of(schema: object) -> Iterator[str]:
    """Every ``pattern`` text and ``patternProperties`` key of a schema, wherever it stands."""
    stack: list[object] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack += node
            continue
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        if isinstance(node.get("patternProperties"), dict):
            yield from (str(key) for key in node["patternProperties"])
        stack += list(node.values())


def bounded(kind: type[Validator]) -> type[Validator]:
    """``kind`` whose pattern checks refuse a text over MAX_MATCHED_CHARS before matching it."""
    pattern, properties = kind.VALIDATORS["pattern"], kind.VALIDATORS["patternProperties"]

    def short_pattern(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and len(instance) > MAX_MATCHED_CHARS:
            yield ValidationError(_too_long("a value", len(instance)))
            return
        yield from pattern(validator, value, instance, schema)

    def short_names(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "object"):
            longest = max((len(str(name)) for name in instance), default=0)
            if longest > MAX_MATCHED_CHARS:
                yield ValidationError(_too_long("a property name", longest))
                return
        yield from properties(validator, value, instance, schema)

    keywords = {"pattern": short_pattern, "patternProperties": short_names}
    extended: type[Validator] = validators.extend(kind, keywords)  # type: ignore[no-untyped-call]
    return extended


def _too_long(what: str, length: int) -> str:
    return (
        f"{what} checked against a pattern may have at most {MAX_MATCHED_CHARS} characters,"
        f" not {length}"
    )


def _walk(items: list[Any], inside_repeat: bool) -> Iterator[tuple[Any, Any, bool]]:
    """Each node of a parsed pattern with whether a repetition encloses it (iteratively)."""
    stack = [(item, inside_repeat) for item in items]
    while stack:
        (op, av), inside = stack.pop()
        yield op, av, inside
        if op in _REPEATS:
            stack += [(item, True) for item in av[2]]
        elif op is sre.SUBPATTERN:
            stack += [(item, inside) for item in av[3]]
        elif op is sre.BRANCH:
            stack += [(item, inside) for branch in av[1] for item in branch]
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            stack += [(item, inside) for item in av[1]]
        elif op is sre.ATOMIC_GROUP:
            stack += [(item, inside) for item in av]
