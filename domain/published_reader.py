"""Stored published content read back typed, strictly and without ever raising (design §10.1).

The audit reads logs it cannot trust: a release decision edited into any shape is
:class:`~domain.recorded.Unreadable`, with a reason the audit names as a violation, never an
exception.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar

from domain.answer_rules import AnswerRefusal, ChatReply
from domain.grounding import Citation
from domain.observations import Observation
from domain.published import (
    ChatAnswer,
    CitedPassage,
    DiagnosisReport,
    FallbackContent,
    GroundedAnswer,
    ListedPassage,
    MissingItem,
    RefusedCitation,
    UngroundedAnswer,
)
from domain.recorded import (
    LegacyAnswer,
    LegacyFact,
    LegacyFallback,
    LegacyReport,
    Recorded,
    Unreadable,
    conclusion_of,
)
from domain.release_states import CitationProblem, FallbackType
from domain.states import MissingKind
from domain.values import Fact


def parse_published(data: object) -> Recorded:
    """Stored content, typed; :class:`Unreadable` when no version of the release wrote it.

    Strict: a dict is read only when it has exactly the keys of one shape, each value of its
    type, so that ``to_json()`` of the result equals ``data``. Never raises.
    """
    try:
        return _content(data)
    except _Malformed as malformed:
        return Unreadable(str(malformed))


def published_conclusion(data: object) -> str | None:
    """The conclusion stored content publishes: a diagnosis report's; None for any other."""
    return conclusion_of(parse_published(data))


class _Malformed(Exception):
    """Why stored content is unreadable, worded to follow "publishes"."""


_E = TypeVar("_E", bound=Enum)


def _content(data: object) -> Recorded:
    if not isinstance(data, dict):
        raise _Malformed(f"content that is not a JSON object ({_shown(data)})")
    match data.get("kind"):
        case "diagnosis":
            return _report(data) if "citations" in data else _legacy_report(data)
        case "fallback":
            return _fallback(data) if "not_checked" in data else _legacy_fallback(data)
        case "answer":
            return _answer(data)
        case kind:
            raise _Malformed(f"content of no kind the release writes: {_shown(kind)}")


def _report(data: dict[str, Any]) -> DiagnosisReport:
    _keys(data, ("kind", "conclusion", "citations", "references", "facts"), "a diagnosis report")
    conclusion = _fact(data, "conclusion", "a conclusion")
    return DiagnosisReport(conclusion, _facts(data["facts"], "a fact"))


def _fallback(data: dict[str, Any]) -> FallbackContent:
    keys = ("kind", "fallback_type", "message", "verified_facts", "no_evidence", "not_checked")
    observed = ("observations",) if "observations" in data else ()
    _keys(data, (*keys, "missing_info", "missing", *observed), "a fallback")
    return FallbackContent(
        observations=_observations(data["observations"]) if observed else None,
        fallback_type=_enum(FallbackType, data["fallback_type"], "a fallback type"),
        message=_str(data["message"], "a fallback message"),
        verified_facts=_facts(data["verified_facts"], "a verified fact"),
        no_evidence=_strs(data["no_evidence"], "NO_EVIDENCE notes"),
        not_checked=_strs(data["not_checked"], "notes of tool calls not checked"),
        missing_info=_strs(data["missing_info"], "missing-information questions"),
        missing=_missing(data["missing"]),
    )


def _answer(data: dict[str, Any]) -> Recorded:
    if "reply" in data:
        return _chat(data)
    if "grounded" not in data:
        _keys(data, ("kind", "text", "citations"), "an answer")
        return LegacyAnswer(
            _str(data["text"], "an answer"), _strs(data["citations"], "passage ids")
        )
    keys = ("kind", "grounded", "text", "citations", "passages", "refusal", "rejected_citations")
    _keys(data, keys, "a knowledge answer")
    match data["grounded"]:
        case True:
            return _grounded(data)
        case False:
            return _ungrounded(data)
        case grounded:
            raise _Malformed(f"a knowledge answer neither grounded nor not ({_shown(grounded)})")


def _chat(data: dict[str, Any]) -> ChatAnswer:
    _keys(data, ("kind", "reply", "text", "refused", "refusal"), "a system-chat answer")
    reply = _enum(ChatReply, data["reply"], "a system-chat reply")
    refusal = (
        None if data["refusal"] is None else _enum(AnswerRefusal, data["refusal"], "a refusal")
    )
    if data["refused"] is not (refusal is not None):
        raise _Malformed("a system-chat answer whose 'refused' contradicts its refusal")
    return ChatAnswer(reply, _str(data["text"], "a system-chat answer"), refusal)


def _grounded(data: dict[str, Any]) -> GroundedAnswer:
    if data["refusal"] is not None or data["rejected_citations"] != []:
        raise _Malformed("a grounded knowledge answer that records a refusal")
    fields = ("id", "title", "text")
    passages = [_object(p, fields, "a passage") for p in _list(data["passages"], "passages")]
    return GroundedAnswer(
        _str(data["text"], "a knowledge answer"),
        _citations(data["citations"], "a knowledge answer's citation"),
        tuple(CitedPassage(*_texts(p, fields, "a passage")) for p in passages),
    )


def _ungrounded(data: dict[str, Any]) -> UngroundedAnswer:
    if data["citations"] != []:
        raise _Malformed(
            "an ungrounded knowledge answer that cites (the harness's list never does)"
        )
    fields = ("id", "title", "sentence")
    passages = [_object(p, fields, "a listed passage") for p in _list(data["passages"], "passages")]
    return UngroundedAnswer(
        _str(data["text"], "a knowledge answer"),
        tuple(ListedPassage(*_texts(p, fields, "a listed passage")) for p in passages),
        _enum(AnswerRefusal, data["refusal"], "a refusal"),
        tuple(_refused(r) for r in _list(data["rejected_citations"], "rejected citations")),
    )


def _refused(value: object) -> RefusedCitation:
    what = "a rejected citation"
    data = _object(value, ("reference", "excerpt", "problem"), what)
    reference, excerpt = _texts(data, ("reference", "excerpt"), what)
    return RefusedCitation(reference, excerpt, _enum(CitationProblem, data["problem"], what))


def _legacy_report(data: dict[str, Any]) -> LegacyReport:
    _keys(data, ("kind", "conclusion", "references", "facts"), "a diagnosis report")
    return LegacyReport(
        _str(data["conclusion"], "a conclusion"),
        _strs(data["references"], "references"),
        tuple(_legacy_fact(f) for f in _list(data["facts"], "facts")),
    )


def _legacy_fallback(data: dict[str, Any]) -> LegacyFallback:
    keys = ("kind", "fallback_type", "message", "verified_facts", "no_evidence", "missing_info")
    _keys(data, keys, "a fallback")
    return LegacyFallback(
        fallback_type=_enum(FallbackType, data["fallback_type"], "a fallback type"),
        message=_str(data["message"], "a fallback message"),
        verified_facts=tuple(_legacy_fact(f) for f in _list(data["verified_facts"], "facts")),
        no_evidence=_strs(data["no_evidence"], "NO_EVIDENCE notes"),
        missing_info=_strs(data["missing_info"], "missing-information questions"),
    )


def _legacy_fact(value: object) -> LegacyFact:
    data = _object(value, ("statement", "references", "excerpt"), "a fact")
    excerpt = data["excerpt"]
    return LegacyFact(
        _str(data["statement"], "a fact"),
        _strs(data["references"], "references"),
        None if excerpt is None else _str(excerpt, "an excerpt"),
    )


def _facts(value: object, what: str) -> tuple[Fact, ...]:
    keys = ("statement", "citations", "references")
    return tuple(_fact(_object(f, keys, what), "statement", what) for f in _list(value, "facts"))


def _fact(data: dict[str, Any], statement: str, what: str) -> Fact:
    """The fact of ``data[statement]`` and its citations; its references must be theirs."""
    fact = Fact(_str(data[statement], what), _citations(data["citations"], f"{what}'s citation"))
    if _strs(data["references"], "references") != fact.references:
        raise _Malformed(f"{what} whose references are not those of its citations")
    return fact


def _citations(value: object, what: str) -> tuple[Citation, ...]:
    keys = ("reference", "excerpt")
    return tuple(
        Citation(*_texts(_object(c, keys, what), keys, what)) for c in _list(value, "citations")
    )


def _observations(value: object) -> tuple[Observation, ...]:
    """Observations whose stored text and time are the harness's own for their record."""
    keys = ("text", "reference", "tool", "scope", "at", "record")
    found: list[Observation] = []
    for item in _list(value, "observations"):
        data = _object(item, keys, "an observation")
        observation = Observation(
            *_texts(data, ("reference", "tool", "scope", "record"), "an observation")
        )
        if observation.to_json() != data:
            raise _Malformed("an observation not in the harness's words for its record")
        found.append(observation)
    return tuple(found)


def _missing(value: object) -> tuple[MissingItem, ...]:
    """The structured missing items; any malformed one is named as the audit always named it."""
    try:
        return tuple(_missing_item(item) for item in _list(value, "missing items"))
    except _Malformed:
        raise _Malformed("missing information whose structured items are malformed") from None


def _missing_item(value: object) -> MissingItem:
    if not isinstance(value, dict) or not set(value) <= {"kind", "service", "start", "end"}:
        raise _Malformed("a missing item")
    kind = _enum(MissingKind, value.get("kind"), "a missing item")
    words = {key: _str(v, "a missing item") for key, v in value.items() if key != "kind"}
    return MissingItem(kind, words.get("service"), words.get("start"), words.get("end"))


def _keys(data: dict[str, Any], keys: tuple[str, ...], what: str) -> None:
    """``data`` has exactly ``keys``."""
    missing = [key for key in keys if key not in data]
    unknown = [_shown(key) for key in data if key not in keys]
    if missing or unknown:
        said = [f"without {', '.join(missing)}"] if missing else []
        said += [f"with unknown {', '.join(unknown)}"] if unknown else []
        raise _Malformed(f"{what} of a shape the release never writes ({'; '.join(said)})"[:300])


def _object(value: object, keys: tuple[str, ...], what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{what} that is not a JSON object ({_shown(value)})")
    _keys(value, keys, what)
    return value


def _texts(data: dict[str, Any], keys: tuple[str, ...], what: str) -> tuple[str, ...]:
    return tuple(_str(data[key], what) for key in keys)


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Malformed(f"{what} that are not a list ({_shown(value)})")
    return value


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _Malformed(f"{what} that is not text ({_shown(value)})")
    return value


def _strs(value: object, what: str) -> tuple[str, ...]:
    items = _list(value, what)
    if not all(isinstance(item, str) for item in items):
        raise _Malformed(f"{what} that are not all text")
    return tuple(items)


def _enum(cls: type[_E], value: object, what: str) -> _E:
    try:
        return cls(value)
    except (ValueError, TypeError):
        raise _Malformed(f"{what} that does not exist: {_shown(value)}") from None


def _shown(value: object) -> str:
    """A scalar as its repr cut to 80 characters; a list or an object by its type only."""
    return f"{value!r:.80}" if isinstance(value, str | int | float | None) else type(value).__name__
