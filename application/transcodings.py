"""Transcodings for every enum and value object stored in events (transcoding is by exact type)."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any, Generic, TypeVar
from uuid import UUID

from eventsourcing.persistence import JSONTranscoder, Mapper, Transcoding

from domain.answer_rules import RetrievedPassage
from domain.catalogue import ALL_ENUMS
from domain.grounding import Citation, JudgedStatement, RejectedCitation
from domain.values import Budget, Fact, McpSession, ModelAttempt, ModelCall, Termination

E = TypeVar("E", bound=Enum)
V = TypeVar("V")

VALUE_OBJECTS: tuple[type[Any], ...] = (
    Budget,
    Termination,
    Citation,
    RejectedCitation,
    JudgedStatement,
    RetrievedPassage,
    ModelAttempt,
    ModelCall,
    McpSession,
)


class EnumAsValue(Transcoding, Generic[E]):
    """Stores an enum member as its value under the enum's class name."""

    def __init__(self, enum_class: type[E]) -> None:
        """One transcoding per enum class."""
        self.type = enum_class
        self.name = enum_class.__name__
        self._enum = enum_class

    def encode(self, obj: E) -> str:
        """The member's value."""
        return str(obj._value_)  # what ``.value`` gives, without its Python-level descriptor

    def decode(self, data: str) -> E:
        """The member with this value."""
        return self._enum(data)


class DataclassAsDict(Transcoding, Generic[V]):
    """Stores a frozen dataclass as its fields; JSON arrays come back as tuples."""

    def __init__(self, value_class: type[V]) -> None:
        """One transcoding per value-object class."""
        self.type = value_class
        self.name = value_class.__name__
        self._class = value_class
        self._fields = tuple(f.name for f in dataclasses.fields(value_class))  # type: ignore[arg-type]
        """The field names in declaration order, looked up once (encoding is by exact type)."""

    def encode(self, obj: V) -> dict[str, Any]:
        """The fields, shallowly: nested values are transcoded by their own types."""
        return {name: getattr(obj, name) for name in self._fields}

    def decode(self, data: dict[str, Any]) -> V:
        """Rebuild the value object."""
        return self._class(**{k: _tuples(v) for k, v in data.items()})


class FactAsDict(DataclassAsDict[Fact]):
    """A fact; one stored before citations (``references`` + one ``excerpt``) reads as citations.

    Such a fact cited each of its references with its one excerpt: under the grounding rules
    each of those citations is checked on its own, so nothing old is taken as proven for free.
    """

    def __init__(self) -> None:
        """The transcoding of :class:`Fact`."""
        super().__init__(Fact)

    def decode(self, data: dict[str, Any]) -> Fact:
        """A fact of either form."""
        if "citations" in data:
            return Fact(data["statement"], tuple(data["citations"]))
        excerpt = data.get("excerpt") or ""
        cited = tuple(Citation(reference, excerpt) for reference in data.get("references", ()))
        return Fact(data["statement"], cited)


def register_all(transcoder: JSONTranscoder) -> None:
    """Register a transcoding for every enum and value object the domain stores."""
    for enum_class in ALL_ENUMS:
        transcoder.register(EnumAsValue(enum_class))
    for value_class in VALUE_OBJECTS:
        transcoder.register(DataclassAsDict(value_class))
    transcoder.register(FactAsDict())


class TupleRestoringMapper(Mapper[UUID]):
    """Restores the tuples that JSON turned into lists at the top level of an event."""

    def to_domain_event(self, stored_event: Any) -> Any:
        """Decode as usual, then turn top-level lists back into tuples (events use tuples)."""
        event = super().to_domain_event(stored_event)
        state = vars(event)
        for key, value in state.items():
            if isinstance(value, list):
                state[key] = tuple(value)
        return event


def _tuples(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
