"""A run's transaction plan: boundaries record, external calls and endings commit.

A boundary of a run (a status change, a model step, a tool's result, a guard's verdict) records
its events with :meth:`RunWrites.save`; they are taken out of their aggregates at once, in the
order the boundaries made them, and wait in the run's queue. :meth:`RunWrites.flush` appends the
queue in one transaction. It is called

* before every external call: a model call (``RunContext.call_model``) and a tool run (the
  tool boundary flushes ``TOOL_INVOCATION_STARTED`` with the queue, so a crash leaves a STARTED
  invocation the recovery sees, and never a tool that ran without one);
* by :meth:`RunWrites.save` itself once the run has a termination (a budget exhausted by this
  boundary, or a run found ended): nothing is queued on an ended run;
* before the deadline times the run out (``RunContext.check_active``), and at the end, where
  the queue, the termination and ``RUN_FINISHED`` are one transaction (:meth:`commit_end`).

So a run costs one transaction per external call plus its start and its end (docs/design.md
§17.1). Nothing a cancel protects is weakened: a cancel appended by another process makes the
next flush conflict on the run's stream (the queue holds the run's next versions), the run is
reread and :class:`~application.harness.RunAborted` raised before the external call; a queued
invocation's outcome is still recorded (:meth:`_keep`). The log keeps the order in which the
boundaries happened, since the queue does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from application.ports import StoreUnavailableError
from domain.errors import ConcurrentWriteError
from domain.run import Run
from domain.tool_invocation import ToolInvocation

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.store import HarnessStore
    from domain.collection import Collection
    from domain.values import Termination


class RunAborted(Exception):
    """The run already has a termination: stop work at this boundary."""

    def __init__(self, termination: Termination) -> None:
        """Carry the termination that ended the run."""
        super().__init__(f"run ended {termination.state.value} ({termination.reason.value})")
        self.termination = termination


class RunWrites(ABC):
    """The write path of a run's live handle (``RunContext`` is the one implementation)."""

    store: HarnessStore
    run: Run
    collecting: bool
    last_position: int
    queue: list[Any]
    """Events recorded by the run's boundaries since the last commit, in the order made."""
    unsaved: list[Any]
    """The events of the last commit the store refused (StoreUnavailableError), for
    :meth:`rewind`."""

    @abstractmethod
    def check_active(self, *, reread: bool = True) -> None:
        """Raise :class:`RunAborted` when the run has ended (``RunContext`` rereads it)."""

    @abstractmethod
    def mark_current(self) -> None:
        """Note that the run in hand matches the log (``RunContext`` skips its next reread)."""

    @property
    def ahead(self) -> bool:
        """True while the run in hand holds events the log has not got yet."""
        return bool(self.run.pending_events) or any(
            e.originator_id == self.run.id for e in self.queue
        )

    def save(self, *others: Collection | ToolInvocation) -> None:
        """Record this boundary's events (the run's and ``others``'); commit with the next flush.

        Once the run has a termination the queue is committed at once, and when this boundary's
        own events ended it (budget exhaustion) :class:`RunAborted` tells the caller to stop.
        """
        self.queue.extend(self.store.collect(self.run, *others, collecting=self.collecting))
        if self.run.termination is not None:
            self.flush()

    def flush(self, *others: Collection | ToolInvocation) -> None:
        """Append the queue (and ``others``' events) in one transaction.

        When another process appended to the run first (a cancel), the run is reread, the other
        streams' facts are still recorded (see :meth:`_keep`) and :class:`RunAborted` tells the
        caller to stop; it is raised too when the events committed ended the run.
        """
        events = self.queue + self.store.collect(self.run, *others, collecting=self.collecting)
        self.queue = []
        if not events:
            return
        try:
            position = self.store.save_events(events)
        except ConcurrentWriteError as conflict:
            self.run = self.store.get_run(self.run.id)
            try:
                self.check_active()
            except RunAborted:
                self._keep(conflict.unsaved, ended=True)
                raise
            self._keep(conflict.unsaved, ended=False)
            raise  # the run was not terminated: a genuine conflict on a stream we own
        except StoreUnavailableError:
            self.unsaved = events
            raise
        if position:
            self.last_position = position
        if any(e.originator_id == self.run.id for e in events):
            self.mark_current()
        if any(type(e) is Run.RunTerminated for e in events) and self.run.termination is not None:
            raise RunAborted(self.run.termination)  # these events exhausted the budget

    def commit_end(self) -> int | None:
        """Append the queue with the run's ending (termination, ``RUN_FINISHED``) at once.

        Raises :class:`ConcurrentWriteError` when another writer ended the run first: the other
        streams' facts are recorded, the run is reread, and the caller decides its end again.
        A conflict on another stream while the run goes on (no writer but this one should touch
        them) raises :class:`StoreUnavailableError`: the run then ends as after an outage.
        """
        events = self.queue + self.store.collect(self.run, collecting=self.collecting)
        self.queue = []
        try:
            position = self.store.save_events(events)
        except ConcurrentWriteError as conflict:
            with suppress(ConcurrentWriteError):  # the conflicting stream's own outcome, say
                self._keep(conflict.unsaved, ended=True)
            self.reload()
            if self.run.termination is None:
                raise StoreUnavailableError(f"the end of the run conflicted: {conflict}") from None
            raise
        if position:
            self.last_position = position
        return position

    def reload(self) -> None:
        """Replace the run with its stored state and drop the queue (after a save that failed).

        A failed save has already collected the run's pending events and applied them in memory
        (a budget charge, say); they were never stored, so the stored stream is the truth.
        """
        self.queue = []
        self.run = self.store.get_run(self.run.id)
        self.mark_current()

    def rewind(self, keep: Callable[[Any], bool]) -> None:
        """After a commit the store refused: requeue the ``keep`` events of it, drop the rest.

        The run is read back and its kept events applied again (they must come before the
        dropped ones); the other streams' kept events are still applied in their aggregates.
        Events the log got after all (the refusal came after the commit) are not queued again.
        """
        lost, self.unsaved = self.unsaved, []
        self.run = self.store.get_run(self.run.id)
        self.queue = []
        for event in lost:
            if not keep(event):
                continue
            if event.originator_id == self.run.id:
                if event.originator_version <= self.run.version:
                    continue
                event.mutate(self.run)
            self.queue.append(event)
        self.mark_current()

    def _keep(self, unsaved: list[Any], *, ended: bool) -> None:
        """Record the other streams' events of a transaction that lost the race on the run.

        An invocation's outcome (READY or FAILED) is always kept: its facts are never lost. Once
        the run has ended nothing new may start, so an invocation's begin and collection progress
        (a late result's gain, a budget stop the run never recorded) are dropped (SPEC §14).
        """
        outcomes = (ToolInvocation.ToolInvocationReady, ToolInvocation.ToolInvocationFailed)
        kept = [
            e
            for e in unsaved
            if getattr(e, "originator_id", None) != self.run.id
            and (not ended or isinstance(e, outcomes))
        ]
        position = self.store.save_events(kept)
        if position:
            self.last_position = position
