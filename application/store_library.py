"""The event store's eventsourcing plumbing: environment, mapper, transcodings, recording, notify.

Everything here adapts the library's ``Application`` to this project: settings are the only
environment, every stored event is chained (:mod:`application.audit.chain`), the domain's values
are transcoded, driver failures become :class:`StoreUnavailableError`, a lost write race becomes
:class:`ConcurrentWriteError`, and in-process listeners hear of every save.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.persistence import IntegrityError, PersistenceError
from eventsourcing.utils import Environment

from application.audit.chain import ChainingMapper, split_state
from application.closing import UseGate, gate_transactions
from application.ports import StoreClosedError, StoreUnavailableError
from application.transcodings import register_all
from domain.errors import ConcurrentWriteError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from eventsourcing.persistence import JSONTranscoder, Mapper


class StoreLibrary(Application[UUID]):
    """``Application`` as this project uses it; the reads and commands build on it."""

    def __init__(self, env: Mapping[str, str] | None, audit_key: str | None) -> None:
        """Build from an explicit environment; chain links are HMACs when ``audit_key`` is set."""
        self.audit_key = audit_key.encode() if audit_key else None
        super().__init__(env=dict(env or {}))
        self.chain = cast("ChainingMapper", self.mapper)
        self.chain.previous_of = self._stored_link
        self.listeners: list[Callable[[Sequence[Any]], None]] = []
        """Called in-process with the events of every successful save (e.g. the CLI's progress)."""
        self._gate = UseGate(lambda: StoreClosedError("the event store was closed"))
        datastore = getattr(self.recorder, "datastore", None)
        if datastore is not None:  # a closed store never closes a connection in use
            gate_transactions(datastore, self._gate)

    def close(self) -> None:
        """Close the connections once the transactions in progress have ended (bounded)."""
        self._gate.close()
        super().close()

    def construct_env(self, name: str, env: Mapping[str, str] | None = None) -> Environment:
        """Use only the given environment, never ``os.environ``: settings are the one source."""
        return Environment(name, dict(env or {}))

    def construct_mapper(self) -> Mapper[UUID]:
        """A mapper that chains every stored event to its stream and restores tuples."""
        return ChainingMapper(self.construct_transcoder(), key=self.audit_key)

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        """UUID, Decimal and datetime, plus every domain enum and value object."""
        super().register_transcodings(transcoder)
        register_all(transcoder)

    def save_events(self, events: list[Any]) -> int | None:
        """Append already-collected events in one transaction; the last one's log position.

        Returns None when there is nothing to append. On a conflict the
        :class:`ConcurrentWriteError` carries the unsaved events, so a caller can still record
        the facts of the other streams after reloading the conflicting one.
        """
        if not events:
            return None
        try:
            with self._store_errors():
                recordings = self._append(events)
        except IntegrityError as error:
            streams = sorted({repr(e.originator_id) for e in events})
            conflict = ConcurrentWriteError(
                events[0].originator_id,
                f"another writer appended first to one of {', '.join(streams)}; reload",
            )
            conflict.unsaved = events
            raise conflict from error
        return recordings[-1].notification.id if recordings else None

    def _append(self, events: list[Any]) -> list[Any]:
        """``Application.save`` for events already collected from our own aggregates.

        ``save`` tells aggregates from events with a runtime ``isinstance`` check against a
        Protocol per object, which costs more than the rest of the Python work of an append;
        these are always events, so they go straight to the recorder and the listeners.
        """
        processing = ProcessingEvent[UUID]()
        processing.events.extend(events)
        recordings = self._record(processing)
        self._notify(recordings)
        return recordings

    def _record(self, processing_event: ProcessingEvent[UUID]) -> list[Any]:
        """Record as usual; the chain links of the save count once it committed."""
        self.chain.begin()
        recordings = super()._record(processing_event)
        self.chain.committed()
        return recordings

    def _notify(self, recordings: list[Any]) -> None:
        """Tell in-process listeners what was appended; a failing listener never fails a save."""
        super()._notify(recordings)
        events = [r.domain_event for r in recordings]
        for listener in self.listeners:
            try:
                listener(events)
            except Exception:  # a broken display must not lose or fail the write
                logging.getLogger(__name__).exception("event listener failed")

    def _stored_link(self, stream: UUID, version: int) -> str | None:
        """The chain link of one stored event (None when there is no such event)."""
        found = self.recorder.select_events(stream, gt=version - 1, lte=version, limit=1)
        return split_state(found[0].state)[1] if found else None

    @contextmanager
    def _store_errors(self) -> Iterator[None]:
        """Translate driver failures into StoreUnavailableError; conflicts pass through."""
        try:
            yield
        except IntegrityError:
            raise
        except (PersistenceError, OSError) as error:
            raise StoreUnavailableError(f"the event store failed: {error}") from error
