"""What the projections remember per stream stays within its bound, and forgetting changes no row.

The trace remembers the run of each invocation and collection stream, and ``uuid_text`` the text
of each stream id; a worker projects every run it ever makes, so both are bounded, and what falls
out is read back (the trace's ``trace_stream`` table) or made again (the text).
"""

from __future__ import annotations

from uuid import uuid4

from sqlalchemy import Engine

from application.store import HarnessStore
from bootstrap.composition import Services
from projections.base import TEXTS_KEPT, texts_kept, uuid_text
from projections.runner import Projector
from projections.trace import Trace
from tests.integration._projection_helpers import dump, run_scenario

BATCH = 7
SCENARIOS = ("conclusion_supported", "limited_checks", "saturated", "budget_safe_progress")


def test_the_trace_remembers_at_most_its_bound_and_finds_every_run_past_it(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    trace = Trace(remember=1)  # starts over in nearly every batch, streams still in flight
    follower = Projector(store, engine, [trace], batch_size=BATCH)
    for name in SCENARIOS:
        run_scenario(services, name, session_id=f"s-{name}")
        follower.catch_up()
        assert len(trace.runs_of_streams) <= trace.remember + BATCH  # one batch's on top
    followed = dump(engine)
    assert len(followed["trace_stream"]) > len(SCENARIOS) * 2  # more streams than remembered
    assert all(row["run_id"] is not None for row in followed["trace_event"])
    assert Projector(store, engine, [Trace()], batch_size=1000).rebuild() > 0
    assert dump(engine) == followed  # remembering everything gives the very same rows


def test_the_text_of_stream_ids_is_kept_for_at_most_its_bound() -> None:
    ids = [uuid4() for _ in range(TEXTS_KEPT + 10)]
    assert [uuid_text(i) for i in ids] == [str(i) for i in ids]
    assert 0 < texts_kept() <= TEXTS_KEPT
