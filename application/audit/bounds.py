"""Every model answer the run used arrived within its bound (design §14), from the log alone.

Each ``AGENT_MODEL_STEP`` records how long the call took and, since version 2, the longest the
harness would wait for it (the model timeout or the run's deadline, whichever came first). An
answer recorded OK that took longer than its bound was waited for past it: a late judge that
decided a SUCCESS showed in the log exactly this way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.audit.integrity import Violation
from domain.run import Run
from domain.states import ModelStepOutcome

if TYPE_CHECKING:
    from application.audit.replay import RunLog

SLACK_MS = 1000
"""Scheduling room between the end of the wait and the clock read that records the latency."""


def check_model_bounds(log: RunLog) -> list[Violation]:
    """Each model answer used (outcome OK) took no longer than its recorded bound."""
    found: list[Violation] = []
    for entry in log.of(Run.AgentModelStep):
        step = entry.event
        late = step.bound_ms > 0 and step.latency_ms > step.bound_ms + SLACK_MS
        if step.outcome is ModelStepOutcome.OK and late:
            why = (
                f"uses a {step.purpose.value} answer that took {step.latency_ms} ms, past its"
                f" bound of {step.bound_ms} ms (the model timeout or the deadline)"
            )
            found.append(Violation("design §14", why, entry.record))
    return found
