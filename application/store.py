"""The event store application: loads and saves the aggregates, returns log positions.

It holds six kinds of aggregate: runs (:mod:`domain.run`), their evidence collections
(:mod:`domain.collection`) and tool invocations (:mod:`domain.tool_invocation`), the session
claims (:mod:`domain.session`), the one stream of audit checkpoints (:mod:`domain.checkpoint`)
and the evaluations ``harness eval`` recorded (:mod:`domain.eval_run`, saved by
:mod:`application.eval_records`).

:class:`HarnessStore` is one eventsourcing ``Application``, in three parts:

* **the library, as this project uses it**: settings are the only environment, every stored
  event is chained (:mod:`application.audit.chain`), the domain's values are transcoded, driver
  failures become :class:`StoreUnavailableError`, a lost write race becomes
  :class:`ConcurrentWriteError`; in-process listeners hear of every save, and every save that
  appended tells the ``after_save`` hooks (the event store's factory,
  ``infrastructure.eventstore``, registers the audit checkpointer there: the store knows nothing
  of the audit);
* **reads**: aggregates rebuilt from their streams, the log's head and entries;
* **commands**: starting runs and collections, and the one termination of a run.
  First-terminal-wins across processes comes from the aggregate plus optimistic concurrency: a
  terminal command is decided on the latest stream; if another process appended first, the save
  conflicts, the run is reloaded and the command decided again (:func:`retry_on_conflict`), so
  the loser gets the existing termination back and no exception escapes.

The store's errors live with the ports (:mod:`application.ports`), since adapters raise them too.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import IntegrityError, PersistenceError
from eventsourcing.utils import Environment

from application.audit.chain import ChainingMapper, state_link
from application.budget_stop import stopped_by_budget
from application.closing import UseGate, gate_transactions
from application.conflicts import MAX_CONFLICT_RETRIES, retry_on_conflict
from application.ports import StoreClosedError, StoreNotInitialisedError, StoreUnavailableError
from application.transcodings import register_all
from domain.collection import Collection, collection_id
from domain.errors import ConcurrentWriteError, IllegalTransitionError, UnknownAggregateError
from domain.run import Run
from domain.session import Session, session_key
from domain.tool_invocation import ToolInvocation
from domain.values import DEFAULT_LIMITS, Budget, Termination

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from datetime import datetime

    from eventsourcing.persistence import JSONTranscoder, Mapper, Notification

    from application.ports import RunEnds
    from domain.states import BudgetKind, CancellationReason, FailureCode

    SaveHook = Callable[["HarnessStore", Sequence[Any], int], None]

A = TypeVar("A", Run, ToolInvocation, Collection, Session)


@dataclass(frozen=True)
class TerminalResult:
    """The run's one termination, and the log position if this call appended it."""

    termination: Termination
    position: int | None


class HarnessStore(Application[UUID]):
    """The event-sourced application holding every run and what it recorded."""

    name = "Harness"
    """Names the tables (``harness_events``); set on each subclass, or it takes the class name."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        no_gain_threshold: int = 3,
        violation_threshold: int = 2,
        audit_key: str | None = None,
    ) -> None:
        """Build from an explicit environment (see ``infrastructure.eventstore``).

        With an ``audit_key`` each event's chain link is an HMAC (see
        :mod:`application.audit.chain`); without one, a plain SHA-256 chain.
        """
        self.audit_key = audit_key.encode() if audit_key else None
        super().__init__(env=dict(env or {}))
        self.chain = cast("ChainingMapper", self.mapper)
        self.chain.previous_of = self._stored_link
        self._gate = UseGate(lambda: StoreClosedError("the event store was closed"))
        datastore = getattr(self.recorder, "datastore", None)
        if datastore is not None:  # a closed store never closes a connection in use
            gate_transactions(datastore, self._gate)
        self.no_gain_threshold = no_gain_threshold
        """Consecutive NO_GAIN results after which a new collection saturates."""
        self.violation_threshold = violation_threshold
        """Consecutive progress-protocol violations after which a new collection saturates."""
        self.listeners: list[Callable[[Sequence[Any]], None]] = []
        """Called in-process with the events of every successful save (e.g. the CLI's progress)."""
        self.recorded: list[Callable[[Sequence[Any]], None]] = []  # as listeners, with positions
        self.after_save: list[SaveHook] = []
        """Called with the events and the last log position of every save that appended (the
        audit checkpointer: :mod:`application.audit.checkpoints`); each handles its own errors."""
        self.worker = ""
        """The id of the worker process executing the runs this store starts (its lease, see
        ``infrastructure.leases``); recorded on every ``RUN_STARTED``. '' for none."""
        self.run_ends: RunEnds | None = None
        """Where this process hears of runs ended anywhere (PostgreSQL: LISTEN); None: read."""
        self.conflicts_resolved = 0
        """How many times a terminal command lost a write race and was decided again."""
        self.looks = 0
        """Reads of the log made to look for another writer before a local call (see
        :meth:`~application.run_journal.RunJournal.others_wrote`)."""

    # -- the library, as this project uses it ------------------------------------------------------

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

        Returns None when there is nothing to append; a save that appended tells the
        ``after_save`` hooks. On a conflict the
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
        position = recordings[-1].notification.id if recordings else None
        if position:
            for hook in self.after_save:
                hook(self, events, position)
        return position

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
        told = [(listener, recordings) for listener in self.recorded]
        for listener, heard in [*told, *((listener, events) for listener in self.listeners)]:
            try:
                listener(heard)
            except Exception:  # a broken display must not lose or fail the write
                logging.getLogger(__name__).exception("event listener failed")

    def _stored_link(self, stream: UUID, version: int) -> str | None:
        """The chain link of one stored event (None when there is no such event)."""
        found = self.recorder.select_events(stream, gt=version - 1, lte=version, limit=1)
        return state_link(found[0].state) if found else None

    @contextmanager
    def _store_errors(self) -> Iterator[None]:
        """Translate driver failures into StoreUnavailableError; conflicts pass through."""
        try:
            yield
        except IntegrityError:
            raise
        except (PersistenceError, OSError) as error:
            raise StoreUnavailableError(f"the event store failed: {error}") from error

    # -- reads -------------------------------------------------------------------------------------

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

    # -- commands ----------------------------------------------------------------------------------

    def save_all(self, *aggregates: Run | ToolInvocation | Collection | Session) -> int | None:
        """Append the pending events of all given aggregates in one transaction.

        Returns the log position of the last event appended, or None when nothing was pending.
        Raises :class:`ConcurrentWriteError` if another writer appended to one of the streams.
        """
        return self.save_events(self.collect(*aggregates))

    def collect(self, *aggregates: Run | ToolInvocation | Collection | Session) -> list[Any]:
        """The pending events :meth:`save_all` would append, taken out of the aggregates.

        For a caller that appends them later, with others (a run's boundaries: see
        :mod:`application.run_journal`).
        """
        return [event for aggregate in aggregates for event in aggregate.collect_events()]

    def start_run(
        self,
        session_id: str,
        query: str,
        deadline: datetime,
        limits: Budget = DEFAULT_LIMITS,
        run_id: UUID | None = None,
        owner: str = "",
    ) -> tuple[UUID, int]:
        """Start a run; returns its id and the log position of ``RUN_STARTED``."""
        run, position = self.begin_run(session_id, query, deadline, limits, run_id, owner)
        return run.id, position

    def begin_run(
        self,
        session_id: str,
        query: str,
        deadline: datetime,
        limits: Budget = DEFAULT_LIMITS,
        run_id: UUID | None = None,
        owner: str = "",
    ) -> tuple[Run, int]:
        """Start a run; returns the saved run (no reread needed) and its log position.

        With an ``owner``, the session must be theirs: its first run claims it in the same
        transaction (:class:`Session`), a later one of another owner raises
        :class:`SessionNotYoursError`; two first runs racing for one session id: one claims it,
        the other is refused.
        """

        def attempt() -> tuple[Run, int]:
            run = Run.start(session_id, query, deadline, limits, run_id, owner, self.worker)
            position = self.save_all(run, *self._claims(session_id, owner))
            assert position is not None
            return run, position

        def on_conflict(conflict: ConcurrentWriteError) -> None:
            claiming = any(type(e) is Session.SessionClaimed for e in conflict.unsaved)
            if not claiming or self.get_session(session_id) is None:
                raise conflict  # the run's own id was taken: not a session race
            # another first run claimed the session meanwhile: check it again

        giving_up = f"session {session_id!r}: could not be claimed"
        return retry_on_conflict(attempt, giving_up=giving_up, on_conflict=on_conflict)

    def new_collection(self, run_id: UUID, known_services: tuple[str, ...] = ()) -> Collection:
        """The run's collection with the configured thresholds, unsaved.

        Its id is derived from the run id, so a second collection of the same run conflicts
        with the first when it is saved: the event store keeps a run to one collection.
        """
        return Collection.start(
            run_id, self.no_gain_threshold, self.violation_threshold, known_services
        )

    def start_collection(self, run_id: UUID) -> int:
        """Start the run's one collection with the configured thresholds."""
        self.get_run(run_id).check_active()
        if self.find_collection(run_id) is not None:
            raise IllegalTransitionError(
                collection_id(run_id), f"run {run_id!r} already has its collection"
            )
        position = self.save_all(self.new_collection(run_id))
        assert position is not None
        return position

    def cancel(self, run_id: UUID, reason: CancellationReason) -> TerminalResult:
        """Cancel a run (first reason wins); a loser gets the existing termination back."""
        return self._decide_terminal(run_id, lambda run: run.cancel(reason))

    def time_out(self, run_id: UUID) -> TerminalResult:
        """Terminate TIMED_OUT (deadline path); first terminal wins."""
        return self._decide_terminal(run_id, lambda run: run.time_out())

    def fail(self, run_id: UUID, code: FailureCode) -> TerminalResult:
        """Terminate FAILED with a failure code; first terminal wins."""
        return self._decide_terminal(run_id, lambda run: run.fail(code))

    def end_orphaned(self, run_id: UUID, now: datetime) -> TerminalResult:
        """End a run whose worker was lost (:meth:`Run.end_orphaned`); first terminal wins.

        Decided on the latest stream: a worker or another sweep that ended the run first makes
        this a no-op (position None) that reports their termination.
        """
        return self._decide_terminal(run_id, lambda run: run.end_orphaned(now))

    def complete(self, run_id: UUID) -> TerminalResult:
        """Terminate SUCCESS after the release decision; first terminal wins."""
        return self._decide_terminal(run_id, lambda run: run.complete())

    def exhaust_budget(self, run_id: UUID, kind: BudgetKind) -> TerminalResult:
        """Terminate BUDGET_EXHAUSTED; the collection stops (never SATURATED) in the same save."""

        def stopped(run: Run) -> list[Collection]:  # :mod:`application.budget_stop`
            return stopped_by_budget(run, (), None, self.find_collection)

        return self._decide_terminal(run_id, lambda run: run.exhaust_budget(kind), stopped)

    def _decide_terminal(
        self,
        run_id: UUID,
        command: Callable[[Run], Termination],
        stopped: Callable[[Run], list[Collection]] = lambda run: [],
    ) -> TerminalResult:
        """Decide ``command`` on the latest run and save it, again after each lost race.

        ``stopped`` gives what joins the run in that save (a collection its budget's end stops).
        """

        def attempt() -> TerminalResult:
            run = self.get_run(run_id)
            termination = command(run)
            return TerminalResult(termination, self.save_all(run, *stopped(run)))

        def on_conflict(_: ConcurrentWriteError) -> None:
            self.conflicts_resolved += 1  # another process appended first: decide again

        giving_up = f"run {run_id!r}: gave up after {MAX_CONFLICT_RETRIES} write conflicts in a row"
        return retry_on_conflict(attempt, giving_up=giving_up, on_conflict=on_conflict)

    def _claims(self, session_id: str, owner: str) -> list[Session]:
        """The session claim a run of ``owner`` must save with it: none when it has one already.

        Raises :class:`SessionNotYoursError` when another owner claimed the session.
        """
        claim = self.get_session(session_id) if owner else None
        if claim is not None:
            claim.check_owner(owner)
        return [Session.claim(session_id, owner)] if owner and claim is None else []


def events_of(store: HarnessStore, aggregate_id: UUID) -> list[Any]:
    """Every stored domain event of one stream, in order (for audits and tests)."""
    return list(store.events.get(aggregate_id))
