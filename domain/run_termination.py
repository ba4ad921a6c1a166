"""How a run ends: cancelled, completed, failed, timed out or out of budget, and then finished.

SPEC §4 "first terminal wins": a run has exactly one termination; a terminal command on a run
that already has it returns that termination and records nothing (:func:`_first_terminal_wins`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec

from eventsourcing.domain import Aggregate

from domain.redaction import failure_cause
from domain.release import final_outcome
from domain.run_core import RunCore
from domain.states import BudgetKind, CancellationReason, CompletionReason, FailureCode, RunState
from domain.tool_states import DiagnosisStopReason
from domain.values import Budget, Termination

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from domain.release_states import ReleaseOutcome

_P = ParamSpec("_P")


def _first_terminal_wins(
    command: Callable[Concatenate[RunTermination, _P], Termination],
) -> Callable[Concatenate[RunTermination, _P], Termination]:
    """Make ``command`` a terminal command under SPEC §4 "first terminal wins".

    On a run that already has its one termination the command returns that termination and
    appends nothing; its own checks are not even run. This is the one place the rule is kept.
    """

    @functools.wraps(command)
    def decided_once(run: RunTermination, /, *args: _P.args, **kwargs: _P.kwargs) -> Termination:
        if run.termination is not None:
            return run.termination
        return command(run, *args, **kwargs)

    return decided_once


class RunTermination(RunCore):
    """The terminal commands of a run and the events that end it."""

    class BudgetExhausted(Aggregate.Event):
        """A hard budget was exceeded; the run terminates BUDGET_EXHAUSTED."""

        class_version = 1
        kind: BudgetKind
        limit: int
        used: int
        stop_reason: DiagnosisStopReason

    class CancellationRequested(Aggregate.Event):
        """The run was asked to stop; the first reason wins."""

        class_version = 1
        reason: CancellationReason

        def apply(self, aggregate: RunTermination) -> None:
            """Remember the first reason."""
            aggregate.cancellation = aggregate.cancellation or self.reason

    class RunTerminated(Aggregate.Event):
        """The run's one termination: its final state, reason and, for a failure, its cause."""

        class_version = 2
        state: RunState
        reason: CancellationReason | FailureCode | CompletionReason
        cause: str
        """What failed, as recorded when it happened (exception type and message, redacted and
        bounded by :func:`domain.redaction.failure_cause`); '' when none is known."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Terminations recorded before causes were name none."""
            state["cause"] = ""

        def apply(self, aggregate: RunTermination) -> None:
            """Set the termination and its cause."""
            aggregate.termination = Termination(state=self.state, reason=self.reason)
            aggregate.failure_cause = self.cause

    class RunFinished(Aggregate.Event):
        """The run's result was persisted: release outcome, usage against budget, duration."""

        class_version = 1
        release_outcome: ReleaseOutcome
        usage: Budget
        limits: Budget
        duration_ms: int

        def apply(self, aggregate: RunTermination) -> None:
            """Close the run."""
            aggregate.finished_outcome = self.release_outcome

    # -- termination (first terminal wins: see _first_terminal_wins) ---------------------------

    @_first_terminal_wins
    def cancel(self, reason: CancellationReason) -> Termination:
        """Cancel: record the reason and terminate by it; a no-op once terminated (SPEC §5).

        DEADLINE_EXCEEDED takes the deadline path (:meth:`time_out`); BUDGET_EXHAUSTED must name
        the budget, so it is only recorded through :meth:`exhaust_budget`.
        """
        if reason is CancellationReason.DEADLINE_EXCEEDED:
            return self.time_out()
        self._invalid_if(
            reason is CancellationReason.BUDGET_EXHAUSTED,
            "budget exhaustion names its budget: use exhaust_budget(kind)",
        )
        self.trigger_event(self.CancellationRequested, reason=reason)
        return self._terminate(reason)

    @_first_terminal_wins
    def complete(self) -> Termination:
        """Terminate SUCCESS after a release decision; a no-op once terminated."""
        self._refuse_if(self.release is None, "a run completes only after its release decision")
        return self._terminate(CompletionReason.COMPLETED)

    @_first_terminal_wins
    def fail(self, code: FailureCode, cause: str = "") -> Termination:
        """Terminate FAILED with a failure code; a no-op once terminated.

        ``cause`` says what failed (e.g. an exception's type and message); it is recorded
        redacted and bounded (:func:`domain.redaction.failure_cause`).
        """
        return self._terminate(code, failure_cause(cause) if cause else "")

    @_first_terminal_wins
    def time_out(self) -> Termination:
        """Terminate TIMED_OUT, then cancel to stop further work; a no-op once terminated."""
        termination = self._terminate(CancellationReason.DEADLINE_EXCEEDED)
        self.trigger_event(self.CancellationRequested, reason=CancellationReason.DEADLINE_EXCEEDED)
        return termination

    @_first_terminal_wins
    def exhaust_budget(self, kind: BudgetKind) -> Termination:
        """Terminate BUDGET_EXHAUSTED naming the budget, then cancel; a no-op once terminated."""
        self.trigger_event(
            self.BudgetExhausted,
            kind=kind,
            limit=self.limits.get(kind),
            used=self.usage.get(kind),
            stop_reason=DiagnosisStopReason.BUDGET_LIMIT_REACHED,
        )
        termination = self._terminate(CancellationReason.BUDGET_EXHAUSTED)
        self.trigger_event(self.CancellationRequested, reason=CancellationReason.BUDGET_EXHAUSTED)
        return termination

    def finish(self, now: datetime) -> ReleaseOutcome:
        """Record ``RUN_FINISHED`` with the release outcome, usage against budget and duration."""
        self._refuse_if(self.termination is None, "a run finishes only after its termination")
        self._refuse_if(self.is_finished, "the run is already finished")
        outcome = final_outcome(self.state, self.release)
        duration_ms = max(0, int((now - self.created_on).total_seconds() * 1000))
        self.trigger_event(
            self.RunFinished,
            release_outcome=outcome,
            usage=self.usage,
            limits=self.limits,
            duration_ms=duration_ms,
        )
        return outcome

    def end_orphaned(self, now: datetime) -> Termination:
        """End a run whose worker was lost: its termination, then ``RUN_FINISHED``.

        TIMED_OUT when the deadline has passed at ``now``, else FAILED with WORKER_LOST. First
        terminal wins: a run its worker (or a cancel) already terminated keeps that termination
        and only gets the ``RUN_FINISHED`` it is missing; a finished run is left as it is.
        """
        if self.termination is None:
            if self.deadline_passed(now):
                self.time_out()
            else:
                self.fail(FailureCode.WORKER_LOST)
        if not self.is_finished:
            self.finish(now)
        assert self.termination is not None
        return self.termination

    def _terminate(
        self, reason: CancellationReason | FailureCode | CompletionReason, cause: str = ""
    ) -> Termination:
        termination = Termination.for_reason(reason)
        self.trigger_event(self.RunTerminated, state=termination.state, reason=reason, cause=cause)
        return termination
