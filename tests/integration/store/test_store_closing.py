"""Closing the store while runs in other threads may still write: refuse, wait, then close.

SQLite's driver crashed the whole process (a segmentation fault seen in CI) when a service
stopped and its store was closed while a run in a worker thread was inserting events.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from application.closing import UseGate
from application.ports import StoreClosedError
from application.store import HarnessStore
from domain.run import Run


def test_a_closing_gate_waits_for_the_uses_in_progress_and_refuses_new_ones() -> None:
    gate = UseGate(lambda: StoreClosedError("closed"))
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with gate.use():
            entered.set()
            leave.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert entered.wait(30)
    assert gate.close(timeout=0) is False  # one use still in progress: not yet safe
    with pytest.raises(StoreClosedError), gate.use():
        pass  # pragma: no cover - refused before the body
    leave.set()
    holder.join(30)
    assert gate.close(timeout=30) is True


def test_a_write_after_close_is_refused_cleanly(store: HarnessStore) -> None:
    run = Run.start("s", "why is checkout slow?", datetime.now(UTC) + timedelta(minutes=1))
    store.close()
    with pytest.raises(StoreClosedError, match="closed"):
        store.save_all(run)
