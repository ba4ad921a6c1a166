"""Which projections make up the read side, in the order a batch applies them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projections.analytics import Analytics
from projections.eval_table import EvalTable
from projections.metrics import Metrics
from projections.run_table import RunTable
from projections.sessions import Sessions
from projections.sse_feed import SseFeed
from projections.trace import Trace

if TYPE_CHECKING:
    from projections.base import Projection


def all_projections() -> tuple[Projection, ...]:
    """Every projection of the read side, in the order a batch applies them."""
    return (RunTable(), Trace(), SseFeed(), Sessions(), Metrics(), Analytics(), EvalTable())
