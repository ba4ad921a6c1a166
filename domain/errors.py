"""The DomainError hierarchy: a refused command raises one naming the id and appends nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from uuid import UUID


class DomainError(Exception):
    """A command was refused by the domain; nothing was appended."""

    def __init__(self, aggregate_id: UUID | str, message: str) -> None:
        """Keep the id so callers (API, CLI) can name it without parsing the message."""
        super().__init__(message)
        self.aggregate_id = aggregate_id


class UnknownAggregateError(DomainError):
    """No run, invocation or collection with this id exists in the store."""


class IllegalTransitionError(DomainError):
    """The command is not allowed in the aggregate's current state."""


class RunNotActiveError(IllegalTransitionError):
    """The run already has a termination, so no further work may be recorded for it."""


class InvocationClosedError(IllegalTransitionError):
    """The tool invocation is already READY or ERROR; its record is final."""


class CollectionClosedError(IllegalTransitionError):
    """The collection is SATURATED or stopped; no new evidence may be recorded."""


class ControlledStopError(CollectionClosedError):
    """A tool was requested after the stop instruction was delivered to the agent (SPEC §9)."""


class InvalidCommandError(DomainError):
    """The command's arguments are malformed (negative usage, empty content, …)."""


class ConcurrentWriteError(DomainError):
    """Another process appended to the same stream first; reload and decide again."""

    unsaved: list[object]
    """The events of the failed transaction, none of which was appended."""

    def __init__(self, aggregate_id: UUID | str, message: str) -> None:
        """Start with no unsaved events; the store attaches them."""
        super().__init__(aggregate_id, message)
        self.unsaved = []


class SessionNotYoursError(DomainError):
    """A run asked to join a session that another owner claimed."""
