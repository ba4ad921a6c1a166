"""The event catalogue: every domain event class and its trace type name (SPEC §13, §17)."""

from __future__ import annotations

import re
from typing import Any

from eventsourcing.domain import CanMutateAggregate

from domain.collection import Collection
from domain.run import Run
from domain.tool_invocation import ToolInvocation

AGGREGATES = (Run, ToolInvocation, Collection)


def _event_classes() -> tuple[type[CanMutateAggregate[Any]], ...]:
    found: list[type[CanMutateAggregate[Any]]] = []
    for aggregate in AGGREGATES:
        for value in vars(aggregate).values():
            is_event = isinstance(value, type) and issubclass(value, CanMutateAggregate)
            if is_event and value.__name__ not in ("Event", "Created"):
                found.append(value)
    return tuple(found)


EVENT_CLASSES = _event_classes()


def event_type_name(event_class: type[object]) -> str:
    """The trace type of an event class: ``RunStarted`` → ``RUN_STARTED``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event_class.__name__).upper()
