"""The event store's commands: starting runs and collections, and the one termination of a run.

First-terminal-wins across processes comes from the aggregate plus optimistic concurrency: a
terminal command is decided on the latest stream; if another process appended first, the save
conflicts, the run is reloaded and the command decided again (:func:`retry_on_conflict`), so the
loser gets the existing termination back and no exception escapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from application.budget_stop import stopped_by_budget
from application.conflicts import MAX_CONFLICT_RETRIES, retry_on_conflict
from application.store_reads import StoreReads
from domain.collection import Collection, collection_id
from domain.errors import IllegalTransitionError
from domain.run import Run
from domain.session import Session
from domain.values import DEFAULT_LIMITS, Budget, Termination

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from uuid import UUID

    from domain.errors import ConcurrentWriteError
    from domain.states import BudgetKind, CancellationReason, FailureCode
    from domain.tool_invocation import ToolInvocation


@dataclass(frozen=True)
class TerminalResult:
    """The run's one termination, and the log position if this call appended it."""

    termination: Termination
    position: int | None


class StoreCommands(StoreReads):
    """Commands that append, each returning the log position of what it appended."""

    no_gain_threshold: int
    """Consecutive NO_GAIN results after which a new collection saturates."""
    violation_threshold: int
    """Consecutive progress-protocol violations after which a new collection saturates."""
    worker: str
    """The id of the worker process executing the runs this store starts (its lease, see
    ``infrastructure.leases``); recorded on every ``RUN_STARTED``. '' for none."""
    conflicts_resolved: int
    """How many times a terminal command lost a write race and was decided again."""

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
