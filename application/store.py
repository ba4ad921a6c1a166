"""The event store application: loads and saves the aggregates, returns log positions.

It holds six kinds of aggregate: runs (:mod:`domain.run`), their evidence collections
(:mod:`domain.collection`) and tool invocations (:mod:`domain.tool_invocation`), the session
claims (:mod:`domain.session`), the one stream of audit checkpoints (:mod:`domain.checkpoint`)
and the evaluations ``harness eval`` recorded (:mod:`domain.eval_run`, saved by
:mod:`application.eval_records`).
:class:`HarnessStore` is composed of three layers, each in a module of its own: the eventsourcing
plumbing (:mod:`application.store_library`), the reads (:mod:`application.store_reads`) and the
commands with their first-terminal-wins policy (:mod:`application.store_commands`). Here it is
configured, and every save that appended tells its ``after_save`` hooks (the event store's
factory, ``infrastructure.eventstore``, registers the audit checkpointer there: the store knows
nothing of the audit). The store's errors live with the ports (:mod:`application.ports`), since
adapters raise them too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from application.store_commands import StoreCommands

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from application.ports import RunEnds

    SaveHook = Callable[["HarnessStore", Sequence[Any], int], None]


class HarnessStore(StoreCommands):
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
        super().__init__(env, audit_key)
        self.no_gain_threshold = no_gain_threshold
        self.violation_threshold = violation_threshold
        self.conflicts_resolved = 0
        self.after_save: list[SaveHook] = []
        """Called with the events and the last log position of every save that appended (the
        audit checkpointer: :mod:`application.audit.checkpoints`); each handles its own errors."""
        self.worker = ""
        self.run_ends: RunEnds | None = None
        """Where this process hears of runs ended anywhere (PostgreSQL: LISTEN); None: read."""
        self.looks = 0
        """Reads of the log made to look for another writer before a local call (see
        :meth:`~application.run_journal.RunJournal.others_wrote`)."""

    def save_events(self, events: list[Any]) -> int | None:
        """Append as :meth:`StoreLibrary.save_events`; then tell the ``after_save`` hooks."""
        position = super().save_events(events)
        if position:
            for hook in self.after_save:
                hook(self, events, position)
        return position
