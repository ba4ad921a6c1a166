"""What a run keeps of a commit it lost: to another writer (a cancel) or to a store that refused it.

A run's commit (:class:`~application.run_journal.RunJournal`) holds the run's events with other
streams' (an invocation, the collection). When another writer ended the run first, the run's
events are lost with the transaction, but an invocation's outcome (READY or FAILED) is kept when
its begin is in the log: its facts are never lost. Once the run has ended nothing may start after
it in the log, so a begin that was still waiting is dropped with everything of its invocation,
now and later (every stream whose first event was in the lost transaction; with local calls, a
tool that ran since the last commit), as is the collection's progress (a late result's gain, a
budget stop the run never recorded) (SPEC §5, §14). When the store refused a commit instead,
the events the caller still wants are queued again (:func:`requeued`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain.tool_invocation import ToolInvocation

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID

    from domain.run import Run


def lost_streams(unsaved: list[Any], run_id: UUID) -> set[UUID]:
    """The streams other than the run's whose first event was in the lost transaction."""
    return {
        e.originator_id for e in unsaved if e.originator_version == 1 and e.originator_id != run_id
    }


def kept(unsaved: list[Any], run_id: UUID, unrecorded: set[UUID], *, ended: bool) -> list[Any]:
    """The other streams' events of a transaction that lost the race on the run, to append.

    While the run goes on, all of them; once it has ended, only the outcomes of invocations
    whose begin is in the log (none of an ``unrecorded`` stream).
    """
    return [
        e
        for e in unsaved
        if getattr(e, "originator_id", None) != run_id and (not ended or _outcome_of(e, unrecorded))
    ]


def requeued(lost: list[Any], keep: Callable[[Any], bool], run: Run) -> list[Any]:
    """The ``keep`` events of a refused commit, to queue again in order on the stored ``run``.

    The run's kept events are applied to it again (they must come before the dropped ones);
    those the log got after all (the refusal came after the commit) are left out.
    """
    queue = []
    for event in lost:
        if not keep(event):
            continue
        if event.originator_id == run.id:
            if event.originator_version <= run.version:
                continue
            event.mutate(run)
        queue.append(event)
    return queue


def _outcome_of(event: Any, unrecorded: set[UUID]) -> bool:
    """Whether ``event`` closes an invocation whose begin is in the log."""
    closing = (ToolInvocation.ToolInvocationReady, ToolInvocation.ToolInvocationFailed)
    return isinstance(event, closing) and event.originator_id not in unrecorded
