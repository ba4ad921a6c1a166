"""Given/when/then helpers shared by the aggregate tests: given events, when a command, then
the events it recorded (or the error it raised), never the aggregate's private state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from uuid import UUID

import pytest
from eventsourcing.domain import Aggregate, CanMutateAggregate

from domain.errors import DomainError

A = TypeVar("A", bound=Aggregate)
Payloads = list[tuple[type[object], dict[str, Any]]]

_ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def replay(cls: type[A], events: Sequence[CanMutateAggregate[UUID]]) -> A:
    """A fresh aggregate built only from events."""
    aggregate: Any = None
    for event in events:
        aggregate = event.mutate(aggregate)
    assert isinstance(aggregate, cls)
    return aggregate


def then_events(aggregate: Aggregate) -> Payloads:
    """The new pending events as (class, payload) pairs; collecting clears them."""
    return [
        (type(event), {k: v for k, v in vars(event).items() if k not in _ENVELOPE})
        for event in aggregate.collect_events()
    ]


def then_refused(
    aggregate: A, error: type[DomainError], command: Callable[[A], object]
) -> DomainError:
    """Run ``command``: it must raise exactly ``error`` naming the aggregate and append nothing."""
    version = aggregate.version
    with pytest.raises(error) as caught:
        command(aggregate)
    assert type(caught.value) is error
    assert caught.value.aggregate_id == aggregate.id
    assert repr(aggregate.id) in str(caught.value)
    assert aggregate.collect_events() == []
    assert aggregate.version == version
    return caught.value
