"""Real processes racing on one store: exactly one termination per run, clean concurrent start."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from application.store import events_of
from bootstrap.composition import bootstrap
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import Intent
from infrastructure.settings import Settings
from tests.integration.store._race_workers import race_terminations, start_service_process

RACERS = 8
RUNS = 50
RESULT_TIMEOUT_S = 300  # a bound on a hung child, not a synchronisation device


def _collect(ctx: Any, target: Any, args_for: Any, count: int) -> dict[int, Any]:
    """Start ``count`` processes behind one barrier and gather one result from each."""
    barrier = ctx.Barrier(count)
    results = ctx.Queue()
    processes = [
        ctx.Process(target=target, args=(*args_for(i), i, barrier, results)) for i in range(count)
    ]
    for process in processes:
        process.start()
    gathered = dict(results.get(timeout=RESULT_TIMEOUT_S) for _ in processes)
    for process in processes:
        process.join(timeout=RESULT_TIMEOUT_S)
        assert process.exitcode == 0
    return gathered


def _prepared_runs(settings: Settings) -> list[UUID]:
    """Runs that any terminal command may end, including ``complete`` (release decided)."""
    run_ids = []
    with bootstrap(settings, create=True) as services:
        for n in range(RUNS):
            run = Run.start(f"s{n}", "status?", datetime.now(UTC) + timedelta(minutes=5))
            run.attempt_routing()
            run.decide_routing(Intent.SYSTEM_CHAT)
            run.decide_release(ReleaseOutcome.SUCCESS, None, {"text": "all green"})
            services.store.save_all(run)
            run_ids.append(run.id)
    return run_ids


@pytest.mark.postgres
def test_racing_processes_terminate_each_run_exactly_once(pg_settings: Settings) -> None:
    run_ids = _prepared_runs(pg_settings)
    ctx = multiprocessing.get_context("spawn")
    keys = [str(r) for r in run_ids]
    url, schema = pg_settings.database_url, pg_settings.database_schema
    gathered = _collect(ctx, race_terminations, lambda i: (url, schema, keys), RACERS)
    errors = [v for v in gathered.values() if isinstance(v, str)]
    assert errors == []
    # The test's own premise: the processes really collided and losers reloaded.
    assert sum(conflicts for conflicts, _ in gathered.values()) > 0
    reports = [outcomes for _, outcomes in gathered.values()]

    with bootstrap(pg_settings) as services:
        store = services.store
        for key in keys:
            run_id = UUID(key)
            types = Counter(type(e).__name__ for e in events_of(store, run_id))
            assert types["RunTerminated"] == 1, key
            assert types["CancellationRequested"] <= 1, key
            stored = store.get_run(run_id).termination
            assert stored is not None
            reported = {(s, r) for outcomes in reports for k, s, r, _ in outcomes if k == key}
            assert reported == {(stored.state.value, stored.reason.value)}
            winners = sum(w for outcomes in reports for k, _, _, w in outcomes if k == key)
            assert winners == 1, f"{key}: {winners} processes claim to have appended"


def test_service_processes_starting_together_after_init_never_fail(settings: Settings) -> None:
    bootstrap(settings, create=True).close()  # `harness db init`
    ctx = multiprocessing.get_context("spawn")
    url, schema = settings.database_url, settings.database_schema
    gathered = _collect(ctx, start_service_process, lambda i: (url, schema), 4)
    assert sorted(gathered) == [0, 1, 2, 3]
    assert not [v for v in gathered.values() if v.startswith("ERROR")], gathered
    with bootstrap(settings) as services:
        for value in gathered.values():
            assert services.store.get_run(UUID(value)).termination is not None
