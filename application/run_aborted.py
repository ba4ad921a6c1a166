"""How a run's end stops work at a boundary: :class:`RunAborted`.

Whatever ended the run (a cancel, the deadline, a failure, its budget), the boundary that sees
it raises and the work in hand stops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from domain.values import Termination


class RunAborted(Exception):
    """The run already has a termination: stop work at this boundary."""

    def __init__(self, termination: Termination) -> None:
        """Carry the termination that ended the run."""
        super().__init__(f"run ended {termination.state.value} ({termination.reason.value})")
        self.termination = termination


__all__ = ["RunAborted"]
