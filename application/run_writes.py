"""A run's transaction plan: boundaries record; external calls, the interval and endings commit.

A boundary of a run (a status change, a model step, a tool's result, a guard's verdict) records
its events with :meth:`RunWrites.save`; they are taken out of their aggregates at once, in the
order the boundaries made them, and wait in the run's queue. :meth:`RunWrites.flush` appends the
queue in one transaction. :meth:`RunWrites.before_call` comes before every model call and tool
run and flushes

* before a call that leaves the service (a remote model, an MCP or plugin tool): what the run
  did so far, with ``TOOL_INVOCATION_STARTED``, is durable before anything goes out, so a crash
  leaves a STARTED invocation the recovery sees, never an external call without one;
* before any call once the commit interval (``HARNESS_RUN_COMMIT_INTERVAL``) has passed since
  the last commit, so live observers see a long run's progress and a crash loses at most that
  much; an interval of 0 flushes before every call;

while a call that stays in the service and changes nothing (:func:`~application.ports.
stays_local`: the offline model, the built-in tools) only queues. :meth:`RunWrites.save` flushes
once the run has a termination (nothing is queued on an ended run); the deadline flushes before
it times the run out, and the end appends the queue, the termination and ``RUN_FINISHED`` in one
transaction (:meth:`commit_end`).

So a run costs one transaction per external call plus its start and its end, and one per
interval at most when its calls are local (docs/design.md §17.1). A cancel is seen before the
next call all the same: a cancel appended by another process makes the next flush conflict on
the run's stream (the queue holds the run's next versions), and while the queue waits the look
before each local call asks whether the run's stream grew (:meth:`others_wrote`: the log, or on
PostgreSQL after the first look a listener that hears of ends) and then flushes into that
conflict; the run is reread and :class:`~application.run_context.RunAborted`
raised. A queued invocation's outcome is still recorded (:meth:`_keep`). The log keeps the order
in which the boundaries happened, since the queue does.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from application.ports import StoreUnavailableError, stays_local
from domain.errors import ConcurrentWriteError
from domain.run import Run
from domain.tool_invocation import ToolInvocation

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID

    from application.store import HarnessStore
    from domain.collection import Collection
    from domain.values import Termination


DEFAULT_COMMIT_INTERVAL_S = 0.25
"""How long a run's events may wait uncommitted at local calls by default: a live observer sees a
long run's progress about this late, and a crash loses at most about this much of a run."""


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
    collection: Collection | None
    """The run's collection once started (its start may still be queued here, not stored)."""
    last_position: int
    queue: list[Any]
    """Events recorded by the run's boundaries since the last commit, in the order made."""
    unrecorded: set[UUID]
    """Streams (an invocation, the collection) whose first event lost the race with a cancel:
    nothing of theirs is recorded, then or later."""
    unsaved: list[Any]
    """The events of the last commit the store refused (StoreUnavailableError), for rewind."""
    commit_interval_s: float
    """The longest the queue waits, at a local call, before it is committed (0: every call)."""
    committed_at: float
    """``time.monotonic()`` at the run's last commit (or its start)."""
    heard: object | None
    """The token of :attr:`HarnessStore.run_ends` since this run's last read look (None: none)."""

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

    def before_call(self, *others: Collection | ToolInvocation, port: object) -> None:
        """Record ``others``' events before a call to ``port`` (the model provider or a tool).

        They are committed with the queue first, unless the call stays local
        (:func:`~application.ports.stays_local`), the commit interval has not passed since the
        last commit and no other writer appended to the run (a cancel: the commit then conflicts
        with it, see :meth:`flush`): then they only join the queue. Raises as :meth:`flush` does.
        """
        waiting = time.monotonic() - self.committed_at < self.commit_interval_s
        if stays_local(port) and waiting and not (self.ahead and self._must_commit()):
            self.save(*others)
        else:
            self.flush(*others)

    def _must_commit(self) -> bool:
        """Whether another writer appended to the run, or the look could not tell (read failed).

        A look that cannot read commits instead: the commit conflicts with a cancel all the same,
        and a store still away refuses it as a commit, its events kept for :meth:`rewind` (a
        failed read left them out of :attr:`unsaved`: the rewind dropped the run's queue).
        """
        try:
            return self.others_wrote()
        except StoreUnavailableError:
            return True

    def others_wrote(self) -> bool:
        """Whether another writer appended to the run since this worker last knew its stream.

        Where the store hears of ended runs (:attr:`HarnessStore.run_ends`, PostgreSQL's
        LISTEN), from memory: whether another process ended the run since this run's first look,
        the only appends another writer makes to a run. Otherwise, and at that first look or when
        the listener was cut off since, one indexed read of at most one stored event: the run's
        next version after the last one stored (the version before its first queued event).
        """
        ends = self.store.run_ends
        if ends is not None and self.heard is not None:
            ended = ends.ended(self.run.id, self.heard)
            if ended is not None:
                return ended
        token = ends.watch(self.run.id) if ends is not None else None  # before the read
        queued = [
            e for e in (*self.queue, *self.run.pending_events) if e.originator_id == self.run.id
        ]
        stored = queued[0].originator_version - 1 if queued else self.run.version
        self.store.looks += 1
        written = self.store.written_after(self.run.id, stored)
        self.heard = token  # only once its read was done: what ended before it, the read saw
        return written

    def close(self) -> None:
        """The run is over in this worker: stop hearing of its end."""
        if self.store.run_ends is not None:
            self.store.run_ends.forget(self.run.id)

    def save(self, *others: Collection | ToolInvocation) -> None:
        """Record this boundary's events (the run's and ``others``'); commit with the next flush.

        Once the run has a termination the queue is committed at once, and when this boundary's
        own events ended it (budget exhaustion) :class:`RunAborted` tells the caller to stop.
        """
        self.queue.extend(self._collect(*others))
        if self.run.termination is not None:
            self.flush()

    def flush(self, *others: Collection | ToolInvocation) -> None:
        """Append the queue (and ``others``' events) in one transaction.

        When another process appended to the run first (a cancel), the run is reread, the other
        streams' facts are still recorded (see :meth:`_keep`) and :class:`RunAborted` tells the
        caller to stop; it is raised too when the events committed ended the run.
        """
        events = self.queue + self._collect(*others)
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
        self.committed_at = time.monotonic()
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
        events = self.queue + self._collect()
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
        When the run has ended meanwhile (a cancel), nothing of it is: :class:`RunAborted`.
        """
        lost, self.unsaved = self.unsaved, []
        self.run = self.store.get_run(self.run.id)
        self.queue = []
        if self.run.termination is not None:  # ended meanwhile: the commit lost the race with it
            with suppress(ConcurrentWriteError):  # (or it landed, and the end came after it)
                self._keep([e for e in lost if keep(e)], ended=True)
            raise RunAborted(self.run.termination)
        for event in lost:
            if not keep(event):
                continue
            if event.originator_id == self.run.id:
                if event.originator_version <= self.run.version:
                    continue
                event.mutate(self.run)
            self.queue.append(event)
        self.mark_current()

    def _collect(self, *others: Collection | ToolInvocation) -> list[Any]:
        """The pending events of the run and ``others``, but none of an unrecorded stream."""
        known, collecting = self.collection, self.collecting
        events = self.store.collect(self.run, *others, collecting=collecting, known=known)
        if self.unrecorded:
            events = [e for e in events if e.originator_id not in self.unrecorded]
        return events

    def _keep(self, unsaved: list[Any], *, ended: bool) -> None:
        """Record the other streams' events of a transaction that lost the race on the run.

        An invocation's outcome (READY or FAILED) is kept when its begin is in the log: its
        facts are never lost. Once the run has ended nothing may start after it in the log, so a
        begin that was still waiting is dropped with everything of its invocation, now and
        later (:attr:`unrecorded`: every stream whose first event was in the lost transaction;
        with local calls, a tool that ran since the last commit), as is the collection's
        progress (a late result's gain, a budget stop the run never recorded) (SPEC §5, §14).
        """
        if ended:
            self.unrecorded |= {
                e.originator_id
                for e in unsaved
                if e.originator_version == 1 and e.originator_id != self.run.id
            }
        kept = [
            e
            for e in unsaved
            if getattr(e, "originator_id", None) != self.run.id
            and (not ended or _outcome_of(e, self.unrecorded))
        ]
        position = self.store.save_events(kept)
        if position:
            self.last_position = position


def _outcome_of(event: Any, unrecorded: set[UUID]) -> bool:
    """Whether ``event`` closes an invocation whose begin is in the log."""
    closing = (ToolInvocation.ToolInvocationReady, ToolInvocation.ToolInvocationFailed)
    return isinstance(event, closing) and event.originator_id not in unrecorded
