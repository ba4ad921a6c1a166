"""The bare eventsourcing floor: a plain Application and a minimal aggregate, not our store."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate


class Widget(Aggregate):
    """A minimal aggregate with one event type carrying an opaque payload."""

    class Started(Aggregate.Created):
        """Created with a payload."""

        data: str

    class Happened(Aggregate.Event):
        """Something happened, with a payload."""

        data: str

        def apply(self, aggregate: Widget) -> None:
            """Count it."""
            aggregate.count += 1

    def __init__(self) -> None:
        self.count = 0

    @classmethod
    def start(cls, data: str) -> Widget:
        """A new widget (``Started`` pending)."""
        return cls._create(cls.Started, id=uuid4(), data=data)

    def happen(self, data: str) -> None:
        """Record one event."""
        self.trigger_event(self.Happened, data=data)


class BareBench(Application[UUID]):
    """A plain Application: no custom transcodings, mapper or environment handling."""


class BareOneTrip(BareBench):
    """The same plain Application under another name, so in a table of its own."""


class StoredSize:
    """The stored state size of a bare event, found in memory (the POPO recorder)."""

    def __init__(self) -> None:
        self._app = BareBench(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})

    def __call__(self, event: Any) -> int:
        """Bytes of ``event``'s stored state."""
        return len(self._app.mapper.to_stored_event(event).state)

    def close(self) -> None:
        """Release the in-memory application."""
        self._app.close()
