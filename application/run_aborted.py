"""How a run's end stops work at a boundary: :class:`RunAborted`, or :class:`BudgetExhausted`.

Whatever ended the run (a cancel, the deadline, a failure, its budget), the boundary that sees
it raises and the work in hand stops. One ending differs in what may follow (SPEC §10): a run
whose budget ran out may still publish the progress it verified, any other ending may not. So
that difference is a type, decided once here (:meth:`RunAborted.of`): a caller that lets a
budget's end through catches :class:`BudgetExhausted`, every other caller :class:`RunAborted`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.states import RunState

if TYPE_CHECKING:
    from domain.values import Termination


class RunAborted(Exception):
    """The run already has a termination: stop work at this boundary."""

    def __init__(self, termination: Termination) -> None:
        """Carry the termination that ended the run."""
        super().__init__(f"run ended {termination.state.value} ({termination.reason.value})")
        self.termination = termination

    @staticmethod
    def of(termination: Termination) -> RunAborted:
        """The exception for a run that ended with ``termination``: which kind says what follows."""
        if termination.state is RunState.BUDGET_EXHAUSTED:
            return BudgetExhausted(termination)
        return RunAborted(termination)


class BudgetExhausted(RunAborted):
    """The run ended BUDGET_EXHAUSTED: the agent stops, Release may still publish (SPEC §10)."""


__all__ = ["BudgetExhausted", "RunAborted"]
