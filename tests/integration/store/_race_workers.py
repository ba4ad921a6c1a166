"""Process entry points for the multi-process tests (importable by spawned interpreters)."""

from __future__ import annotations

import traceback
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from uuid import UUID

from bootstrap.composition import bootstrap
from domain.states import BudgetKind, CancellationReason, FailureCode
from infrastructure.settings import Settings

if TYPE_CHECKING:
    from multiprocessing.synchronize import Barrier
    from queue import Queue

    from application.store import HarnessStore, TerminalResult


def _terminal_command(store: HarnessStore, run_id: UUID, worker: int, index: int) -> TerminalResult:
    """Each worker tries a different terminal command on the same run at the same time."""
    match (worker + index) % 7:
        case 0:
            return store.cancel(run_id, CancellationReason.USER_REQUESTED)
        case 1:
            return store.cancel(run_id, CancellationReason.CLIENT_DISCONNECTED)
        case 2:
            return store.time_out(run_id)
        case 3:
            return store.exhaust_budget(run_id, BudgetKind.TOOL_CALLS)
        case 4:
            return store.fail(run_id, FailureCode.MODEL_FAILED)
        case 5:
            return store.cancel(run_id, CancellationReason.INTERNAL_FAILURE)
        case _:
            return store.complete(run_id)


def race_terminations(
    url: str,
    schema: str,
    run_ids: list[str],
    worker: int,
    barrier: Barrier,
    results: Queue[tuple[int, tuple[int, list[tuple[str, str, str, bool]]] | str]],
) -> None:
    """Terminate every run, racing the other workers; report what each call returned."""
    try:
        services = bootstrap(Settings(database_url=url, database_schema=schema))
        store = services.store
        barrier.wait(timeout=120)
        outcomes = []
        for index, key in enumerate(run_ids):
            result = _terminal_command(store, UUID(key), worker, index)
            t = result.termination
            outcomes.append((key, t.state.value, t.reason.value, result.position is not None))
        services.close()
        results.put((worker, (store.conflicts_resolved, outcomes)))
    except Exception:  # reported to the parent, which fails the test with the traceback
        results.put((worker, traceback.format_exc()))


def start_service_process(
    url: str,
    schema: str,
    worker: int,
    barrier: Barrier,
    results: Queue[tuple[int, str]],
) -> None:
    """Open the store the way a service worker does, at the same moment as the others."""
    try:
        barrier.wait(timeout=120)
        services = bootstrap(Settings(database_url=url, database_schema=schema))
        deadline = datetime.now(UTC) + timedelta(minutes=1)
        run_id, _ = services.store.start_run(f"worker-{worker}", "are you up?", deadline)
        services.store.cancel(run_id, CancellationReason.USER_REQUESTED)
        services.close()
        results.put((worker, str(run_id)))
    except Exception:
        results.put((worker, "ERROR " + traceback.format_exc()))
