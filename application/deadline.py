"""How long a run's port call may still take: the deadline, less a reserve to publish progress.

Once the agent has reported progress, a share of the run's time is kept to publish it: a step
that stalls (a model or tool call that does not answer) is cut that much before the deadline,
so the run falls back with the progress that had arrived (SUCCESS, FALLBACK
INSUFFICIENT_EVIDENCE when Release verifies it) instead of ending TIMED_OUT with nothing
published. Before any progress, and once the agent loop is over, the deadline itself bounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

    from domain.collection import Collection

PUBLISH_RESERVE = 0.1
"""The share of a run's time kept, once the agent reported progress, to publish it."""
PUBLISH_RESERVE_MAX_S = 2.0
"""The most seconds kept (Release of progress is local: no model call)."""


def time_left(
    deadline: datetime, now: datetime, span_s: float, collection: Collection | None
) -> tuple[float, str]:
    """Seconds a call may take and which limit sets them; ``collection`` while collecting.

    ``span_s`` is the time the run had when its worker took it (the reserve is a share of it).
    """
    left = (deadline - now).total_seconds()
    if collection is None or not collection.facts:
        return left, "the run's deadline"
    reserve = min(PUBLISH_RESERVE_MAX_S, PUBLISH_RESERVE * span_s)
    return left - reserve, "the run's deadline, less the time kept to publish its progress"
