"""Reading one run's streams: its Run and Collection streams and the invocations it charged for.

Never a projection: every aggregate is rebuilt from its own stream, and each stream is cut at the
version its aggregate was rebuilt from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from application.store import events_of
from domain.collection import Collection
from domain.errors import UnknownAggregateError
from domain.run import Run
from domain.states import BudgetKind

if TYPE_CHECKING:
    from application.store import HarnessStore
    from domain.tool_invocation import ToolInvocation
    from domain.tool_states import DiagnosisStopReason

E = TypeVar("E")


@dataclass(frozen=True)
class RunStreams:
    """The run's streams, each cut at the version its aggregate was rebuilt from."""

    run: Run
    run_events: list[Any]
    collection: Collection | None
    collection_events: list[Any]
    invocations: list[tuple[ToolInvocation, list[Any]]]

    def of(self, *classes: type[Any]) -> list[Any]:
        """The Run and Collection events of the given classes, each stream in order."""
        return [e for e in (*self.run_events, *self.collection_events) if isinstance(e, classes)]

    def last(self, cls: type[E]) -> E | None:
        """The latest event of one class, if any."""
        found: list[E] = self.of(cls)
        return found[-1] if found else None

    @property
    def stop_reason(self) -> DiagnosisStopReason | None:
        """Why evidence collection stopped, if it did."""
        return self.collection.stop_reason if self.collection else None


def read_streams(store: HarnessStore, run_id: UUID) -> RunStreams:
    """The run's streams from the store, each cut at the version its aggregate was rebuilt from."""
    run = store.get_run(run_id)
    run_events = events_of(store, run_id)[: run.version]
    try:
        collection: Collection | None = store.get_collection(run_id)
    except UnknownAggregateError:
        collection = None
    collection_events = events_of(store, collection.id)[: collection.version] if collection else []
    invocations: list[tuple[ToolInvocation, list[Any]]] = []
    for key in _invocation_ids(run_events, collection_events):
        try:
            invocation = store.get_invocation(key)
        except UnknownAggregateError:
            continue  # charged in a transaction whose begin was never stored
        if invocation.run_id == run_id:
            invocations.append((invocation, events_of(store, key)[: invocation.version]))
    return RunStreams(run, run_events, collection, collection_events, invocations)


def _invocation_ids(run_events: list[Any], collection_events: list[Any]) -> list[UUID]:
    """Invocation ids in order of first mention: tool-call charges, then harness gain records."""
    found: dict[UUID, None] = {}
    for event in run_events:
        if isinstance(event, Run.BudgetCharged) and event.kind is BudgetKind.TOOL_CALLS:
            try:
                found.setdefault(UUID(event.ref))
            except ValueError:
                continue
    for event in collection_events:
        if isinstance(event, Collection.ToolProgress) and event.invocation_id is not None:
            found.setdefault(event.invocation_id)
    return list(found)
