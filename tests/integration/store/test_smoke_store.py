from __future__ import annotations

from datetime import UTC, datetime, timedelta

from application.store import HarnessStore
from domain.states import CancellationReason, RunState


def test_a_started_run_can_be_cancelled_once(store: HarnessStore) -> None:
    run_id, position = store.start_run("s", "why?", datetime.now(UTC) + timedelta(minutes=1))
    first = store.cancel(run_id, CancellationReason.USER_REQUESTED)
    second = store.cancel(run_id, CancellationReason.CLIENT_DISCONNECTED)
    assert first.termination.state is RunState.CANCELLED
    assert second.termination == first.termination
    assert second.position is None
    assert first.position is not None and first.position > position
