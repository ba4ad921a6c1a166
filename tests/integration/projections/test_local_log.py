"""Followers that take this process's appends as events give the rows a rebuild gives.

Both databases. Every outcome of SPEC §10 (the fleet), projected after each run from the events
the store kept in memory, must give the very rows a rebuild from the log gives; and entries
another process appended in between (another store on the same database) are read from the
log, in order, with nothing lost or applied twice.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from bootstrap.composition import bootstrap
from projections.local_log import LocalLog
from projections.runner import Projector
from tests.integration._projection_helpers import dump, notifications, run_fleet, run_scenario

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from application.store import HarnessStore
    from bootstrap.composition import Services


def test_every_outcome_followed_from_memory_gives_a_rebuilds_rows(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    local = LocalLog()
    store.recorded.append(local.recorded)
    follower = Projector(store, engine, batch_size=7, local=local)
    run_fleet(services, follower.catch_up)
    positions = [position for position, _, _ in notifications(store)]
    entries = len(positions)
    # Not one entry was read back from the log, but for a batch (of 7) across each position
    # the log skipped (PostgreSQL's ids have holes where an append lost a race): such a hole
    # cannot be told from another process's entry without reading.
    holes = sum(1 for a, b in itertools.pairwise([0, *positions]) if b != a + 1)
    assert entries - 7 * holes <= local.taken <= entries
    assert holes or local.taken == entries
    followed = dump(engine)
    assert {row["position"] for row in followed["projection_tracking"]} == {store.head()}
    assert Projector(store, engine, batch_size=1000).rebuild() == entries
    assert dump(engine) == followed


def test_another_processes_appends_in_between_are_read_from_the_log(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    local = LocalLog()
    store.recorded.append(local.recorded)
    follower = Projector(store, engine, local=local)
    with bootstrap(services.settings) as other:  # a second process's store on the same log
        run_scenario(services, "conclusion_supported", "here")
        run_scenario(other, "budget_no_progress", "there")
        run_scenario(services, "evidence_guard_fails", "here")
        assert follower.catch_up() == len(notifications(store))
    assert 0 < local.taken < len(notifications(store))
    followed = dump(engine)
    assert {row["session_id"] for row in followed["diagnosis_run"]} == {"here", "there"}
    assert len(followed["diagnosis_run"]) == 3
    assert Projector(store, engine).rebuild() == len(notifications(store))
    assert dump(engine) == followed
