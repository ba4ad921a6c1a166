"""The event store's reads: aggregates rebuilt from their streams, the log's head and entries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast

from eventsourcing.application import AggregateNotFoundError

from application.ports import StoreNotInitialisedError, StoreUnavailableError
from application.store_library import StoreLibrary
from domain.collection import Collection, collection_id
from domain.errors import UnknownAggregateError
from domain.run import Run
from domain.session import Session, session_key
from domain.tool_invocation import ToolInvocation

if TYPE_CHECKING:
    from collections.abc import Sequence
    from uuid import UUID

    from eventsourcing.persistence import Notification

A = TypeVar("A", Run, ToolInvocation, Collection, Session)


class StoreReads(StoreLibrary):
    """Reads of single streams and of the log, each failure translated to the store's errors."""

    def get_run(self, run_id: UUID) -> Run:
        """The run, rebuilt from its stream; :class:`UnknownAggregateError` if there is none."""
        return self._get(Run, run_id, "run")

    def get_invocation(self, invocation_id: UUID) -> ToolInvocation:
        """The tool invocation; :class:`UnknownAggregateError` if there is none."""
        return self._get(ToolInvocation, invocation_id, "tool invocation")

    def get_collection(self, run_id: UUID) -> Collection:
        """The run's collection; :class:`UnknownAggregateError` if it was never started."""
        return self._get(Collection, collection_id(run_id), f"collection of run {run_id!r}, id")

    def get_session(self, session_id: str) -> Session | None:
        """The claim of a session id (None: no run claimed it yet)."""
        try:
            return self._get(Session, session_key(session_id), "session")
        except UnknownAggregateError:
            return None

    def run_started(self, run_id: UUID) -> Run.RunStarted:
        """The run's ``RUN_STARTED`` alone (one stored event read, not the whole stream)."""
        with self._store_errors():
            found = list(self.events.get(run_id, lte=1))
        if not found or not isinstance(found[0], Run.RunStarted):
            raise UnknownAggregateError(run_id, f"no run {run_id!r}")
        return found[0]

    def catch_up(self, run: Run) -> Run:
        """Apply the events appended to ``run``'s stream since its version (no full rebuild).

        The run must have no pending events; it is mutated in place and returned.
        """
        with self._store_errors():
            for event in self.events.get(run.id, gt=run.version):
                cast("Run.Event", event).mutate(run)
        return run

    def written_after(self, aggregate_id: UUID, version: int) -> bool:
        """Whether the stream has a stored event after ``version`` (one row read, not decoded)."""
        with self._store_errors():
            return bool(self.recorder.select_events(aggregate_id, gt=version, limit=1))

    def stream(self, aggregate_id: UUID) -> list[Any]:
        """Every stored event of one stream, in order (empty: no such stream)."""
        with self._store_errors():
            return list(self.events.get(aggregate_id))

    def head(self) -> int:
        """The last log position (0 for an empty log)."""
        with self._store_errors():
            return self.recorder.max_notification_id() or 0

    def latest_event(self, aggregate_id: UUID) -> Any | None:
        """The last stored event of one stream (None: it has none), without reading the rest."""
        with self._store_errors():
            found = list(self.events.get(aggregate_id, desc=True, limit=1))
        return found[0] if found else None

    def notifications(
        self, after: int, limit: int, topics: Sequence[str] = (), stop: int | None = None
    ) -> Sequence[Notification]:
        """Up to ``limit`` log entries after position ``after``, in log order.

        ``topics`` keeps only entries of those event topics; ``stop`` is the last position read.
        """
        with self._store_errors():
            return self.recorder.select_notifications(
                after, limit, stop=stop, topics=topics, inclusive_of_start=False
            )

    def check_ready(self) -> None:
        """Raise a clear error unless the tables exist and the database answers."""
        try:
            self.head()
        except StoreUnavailableError as error:
            text = str(error)
            if "does not exist" in text or "no such table" in text:
                raise StoreNotInitialisedError(
                    "the event store tables do not exist: run `harness db init` once first"
                ) from error
            raise

    def find_collection(self, run_id: UUID) -> Collection | None:
        """The run's collection, or None when it has none in the log (yet)."""
        try:
            return self.get_collection(run_id)
        except UnknownAggregateError:
            return None

    def _get(self, cls: type[A], aggregate_id: UUID, what: str) -> A:
        try:
            with self._store_errors():
                aggregate: object = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            raise UnknownAggregateError(aggregate_id, f"no {what} {aggregate_id!r}") from None
        if not isinstance(aggregate, cls):
            raise UnknownAggregateError(aggregate_id, f"{aggregate_id!r} is not a {what}")
        return aggregate


def events_of(store: StoreReads, aggregate_id: UUID) -> list[Any]:
    """Every stored domain event of one stream, in order (for audits and tests)."""
    return list(store.events.get(aggregate_id))
