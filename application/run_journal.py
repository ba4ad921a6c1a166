"""A run's transaction plan: boundaries record; external calls, the interval and endings commit.

A boundary of a run (a status change, a model step, a tool's result, a guard's verdict) records
its events with :meth:`RunJournal.record`; they are taken out of their aggregates at once, in the
order the boundaries made them, and wait in the journal's queue. :meth:`RunJournal.commit`
appends the queue in one transaction. :meth:`RunJournal.commit_or_record` comes before every
model call and tool run and commits

* before a call that leaves the service (a remote model, an MCP or plugin tool): what the run
  did so far, with ``TOOL_INVOCATION_STARTED``, is durable before anything goes out, so a crash
  leaves a STARTED invocation the recovery sees, never an external call without one;
* before any call once the commit interval (``HARNESS_RUN_COMMIT_INTERVAL``) has passed since
  the last commit, so live observers see a long run's progress and a crash loses at most that
  much; an interval of 0 commits before every call;

while a call that stays in the service and changes nothing (:func:`~application.ports.
stays_local`: the offline model, the built-in tools) only records. :meth:`RunJournal.record`
commits once the run has a termination (nothing is queued on an ended run); the deadline commits
before it times the run out, and the end appends the queue, the termination and
``RUN_FINISHED`` in one transaction (:meth:`RunJournal.commit_end`).

So a run costs one transaction per external call plus its start and its end, and one per
interval at most when its calls are local (docs/design.md §17.1). A cancel is seen before the
next call all the same: a cancel appended by another process makes the next commit conflict on
the run's stream (the queue holds the run's next versions), and while the queue waits the look
before each local call asks whether the run's stream grew (:meth:`RunJournal.others_wrote`: the
log, or on PostgreSQL after the first look a listener that hears of ends) and then commits into
that conflict; the run is reread and :class:`~application.run_aborted.RunAborted` raised. A
queued invocation's outcome is still recorded (:mod:`application.lost_commits`). The log
keeps the order in which the boundaries happened, since the queue does.
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from application.budget_stop import stopped_by_budget
from application.lost_commits import kept, lost_streams, requeued
from application.ports import StoreUnavailableError, stays_local
from application.run_aborted import RunAborted
from domain.errors import ConcurrentWriteError
from domain.run import Run

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID

    from application.store import HarnessStore
    from domain.collection import Collection
    from domain.tool_invocation import ToolInvocation


DEFAULT_COMMIT_INTERVAL_S = 0.25
"""How long a run's events may wait uncommitted at local calls by default: a live observer sees a
long run's progress about this late, and a crash loses at most about this much of a run."""


@dataclass
class RunJournal:
    """The run in hand and its way into the log: what waits, what was committed, what was lost."""

    store: HarnessStore
    run: Run
    """The run as this worker knows it; a commit that lost a race rereads it from the log."""
    recheck: Callable[[], None]
    """After a lost race, on the reread run: raises :class:`RunAborted` once it has ended (the
    owner's ``check_active``, which also times the run out past its deadline)."""
    commit_interval_s: float = 0.0
    """The longest the queue waits, at a local call, before it is committed (0: every call)."""
    collection: Collection | None = None
    """The run's collection once started (its start may still be queued here, not stored)."""
    collecting: bool = True
    """False once the agent loop has ended: a budget spent in Release stops no collection."""
    last_position: int = 0
    """The log position of the last event this journal appended (0: none yet)."""
    queue: list[Any] = field(default_factory=list)
    """Events recorded by the run's boundaries since the last commit, in the order made."""
    unrecorded: set[UUID] = field(default_factory=set)
    """Streams (an invocation, the collection) whose first event lost the race with a cancel:
    nothing of theirs is recorded, then or later."""
    unsaved: list[Any] = field(default_factory=list)
    """The events of the last commit the store refused (StoreUnavailableError), for rewind."""
    committed_at: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` at the run's last commit (or its start)."""
    heard: object | None = None
    """The token of :attr:`HarnessStore.run_ends` since this run's last read look (None: none)."""
    current: bool = False
    """True after this worker read or appended to the run: the next check needs no reread (see
    :meth:`mark_current`)."""

    @property
    def ahead(self) -> bool:
        """True while the run in hand holds events the log has not got yet."""
        return bool(self.run.pending_events) or any(
            e.originator_id == self.run.id for e in self.queue
        )

    def mark_current(self) -> None:
        """Note that the run in hand is current: this worker has just read or appended to it.

        An append succeeded against the run's version, so no other writer (a cancel) came before
        it; the next check may skip its reread. Commits that touch only other streams in between
        keep this: a cancel landing then is seen at the next check or makes the next append to
        the run conflict, exactly as one landing right after a reread would.
        """
        self.current = True

    def commit_or_record(self, *others: Collection | ToolInvocation, before: object) -> None:
        """Make the run's events and ``others``' durable before a call to ``before`` (a port).

        They are committed with the queue, unless the call stays local
        (:func:`~application.ports.stays_local`), the commit interval has not passed since the
        last commit and no other writer appended to the run (a cancel: the commit then conflicts
        with it, see :meth:`commit`): then they are only recorded. Raises as :meth:`commit` does.
        """
        waiting = time.monotonic() - self.committed_at < self.commit_interval_s
        if stays_local(before) and waiting and not (self.ahead and self._must_commit()):
            self.record(*others)
        else:
            self.commit(*others)

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

    def record(self, *others: Collection | ToolInvocation) -> None:
        """Queue this boundary's events (the run's and ``others``'); the next commit stores them.

        Once the run has a termination the queue is committed at once, and when this boundary's
        own events ended it (budget exhaustion) :class:`RunAborted` tells the caller to stop.
        """
        self.queue.extend(self._collect(*others))
        if self.run.termination is not None:
            self.commit()

    def commit(self, *others: Collection | ToolInvocation) -> None:
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
                self.recheck()
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
            raise RunAborted.of(self.run.termination)  # these events exhausted the budget

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

    def catch_up(self) -> None:
        """Read the run's latest state: caught up when nothing waits, else rebuilt from the log.

        What waited was never stored, so it is dropped with the queue.
        """
        if self.ahead:
            self.queue = []
            self.run = self.store.get_run(self.run.id)
        else:
            self.run = self.store.catch_up(self.run)

    def requeue_refused(self) -> None:
        """Put the events of the commit the store just refused back in front of the queue."""
        self.queue, self.unsaved = self.unsaved + self.queue, []

    def rewind(self, keep: Callable[[Any], bool]) -> None:
        """After a commit the store refused: requeue the ``keep`` events of it, drop the rest.

        The run is read back and its kept events applied again
        (:func:`~application.lost_commits.requeued`); the other streams' kept events are still
        applied in their aggregates. When the run has ended meanwhile (a cancel), nothing of it
        is: :class:`RunAborted`.
        """
        lost, self.unsaved = self.unsaved, []
        self.run = self.store.get_run(self.run.id)
        self.queue = []
        if self.run.termination is not None:  # ended meanwhile: the commit lost the race with it
            with suppress(ConcurrentWriteError):  # (or it landed, and the end came after it)
                self._keep([e for e in lost if keep(e)], ended=True)
            raise RunAborted.of(self.run.termination)
        self.queue = requeued(lost, keep, self.run)
        self.mark_current()

    def _collect(self, *others: Collection | ToolInvocation) -> list[Any]:
        """The pending events of the run and ``others``, but none of an unrecorded stream.

        While the agent collects, a budget exhaustion among the run's events stops its
        collection in the same transaction (:mod:`application.budget_stop`).
        """
        find, held = self.store.find_collection, self.collection
        stopped = stopped_by_budget(self.run, others, held, find) if self.collecting else []
        events = self.store.collect(self.run, *others, *stopped)
        if self.unrecorded:
            events = [e for e in events if e.originator_id not in self.unrecorded]
        return events

    def _keep(self, unsaved: list[Any], *, ended: bool) -> None:
        """Record the other streams' events of a transaction that lost the race on the run.

        Once the run has ended, every stream whose first event was in the lost transaction is
        :attr:`unrecorded` from now on (:mod:`application.lost_commits`).
        """
        if ended:
            self.unrecorded |= lost_streams(unsaved, self.run.id)
        position = self.store.save_events(kept(unsaved, self.run.id, self.unrecorded, ended=ended))
        if position:
            self.last_position = position
