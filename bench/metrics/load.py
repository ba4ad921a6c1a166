"""The rows of ``--runs`` finished runs, written through the metrics projection's own writer."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from domain.release_states import FallbackType, ReleaseOutcome
from domain.states import Intent, ModelStepOutcome, ModelStepPurpose, RunState
from domain.tool_states import ToolRejectionCode
from infrastructure.read_store import SqlReadStore
from projections.metric_families import (
    FIRST_EVENT,
    GUARD_VERDICTS,
    MODEL_CALLS,
    MODEL_TOKENS,
    PREFLIGHT_REJECTIONS,
    RUN_DURATION,
    RUNS,
    RUNS_STARTED,
    TOOL_INVOCATIONS,
)
from projections.metrics import Samples

if TYPE_CHECKING:
    from sqlalchemy import Engine

TOOLS = [f"tool_{n:02d}" for n in range(12)]
BATCH = 1000
"""Runs per transaction, as a projection batch would carry them."""


def load(engine: Engine, runs: int, seed: int = 16) -> int:
    """Count ``runs`` finished runs into ``metric_sample``; the rows it holds afterwards."""
    chosen = random.Random(seed)
    store = SqlReadStore(engine)
    for start in range(0, runs, BATCH):
        samples = Samples()
        for _ in range(min(BATCH, runs - start)):
            _one_run(samples, chosen)
        with store.transaction() as view:
            samples.flush(view)
    with engine.connect() as connection:
        return int(connection.exec_driver_sql("SELECT count(*) FROM metric_sample").scalar() or 0)


def _one_run(samples: Samples, chosen: random.Random) -> None:
    """The counts of one finished run, as the projection makes them from its events."""
    outcome = chosen.choice(list(ReleaseOutcome))
    fallback = chosen.choice(list(FallbackType)).value if outcome is ReleaseOutcome.FALLBACK else ""
    samples.count(RUNS_STARTED, {})
    samples.count(
        RUNS,
        {
            "intent": chosen.choice(list(Intent)).value,
            "release_outcome": outcome.value,
            "fallback_type": fallback,
            "termination_state": chosen.choice(list(RunState)).value,
        },
    )
    samples.observe(RUN_DURATION, {"release_outcome": outcome.value}, chosen.randint(50, 90_000))
    samples.observe(FIRST_EVENT, {}, chosen.randint(1_000, 3_000_000))
    for _ in range(chosen.randint(0, 4)):
        status = chosen.choice(("READY", "ERROR"))
        samples.count(TOOL_INVOCATIONS, {"tool": chosen.choice(TOOLS), "status": status})
    if chosen.random() < 0.2:
        samples.count(PREFLIGHT_REJECTIONS, {"code": chosen.choice(list(ToolRejectionCode)).value})
    samples.count(
        GUARD_VERDICTS, {"guard": "evidence", "verdict": chosen.choice(("VALID", "INVALID"))}
    )
    verdict = chosen.choice(("SUPPORTED", "UNSUPPORTED", "UNAVAILABLE"))
    samples.count(GUARD_VERDICTS, {"guard": "semantic", "verdict": verdict})
    for _ in range(chosen.randint(1, 5)):
        purpose, result = (
            chosen.choice(list(ModelStepPurpose)),
            chosen.choice(list(ModelStepOutcome)),
        )
        samples.count(MODEL_CALLS, {"purpose": purpose.value, "outcome": result.value})
        samples.count(MODEL_TOKENS, {"direction": "input"}, chosen.randint(100, 4000))
        samples.count(MODEL_TOKENS, {"direction": "output"}, chosen.randint(10, 800))
