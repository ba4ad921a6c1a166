"""Crash recovery's moving parts: the proof a process died, the heartbeat, the loop, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import pytest
from eventsourcing.persistence import StoredEvent
from sqlalchemy import Engine

from application.dispatch import RunDispatcher
from application.ports import StoreUnavailableError
from application.recovery import Liveness, RecoveryLoop, Unfinished
from application.store import HarnessStore
from bootstrap.composition import Services, bootstrap
from domain.states import FailureCode, RunState
from infrastructure.leases import (
    Heartbeat,
    SqlLeases,
    start_heartbeat,
    worker_lease,
)
from infrastructure.processes import process_identity, proven_dead
from infrastructure.settings import Settings
from projections.runner import Projector
from tests.helpers import scripted
from tests.integration._projection_helpers import QUERY
from tests.integration._recovery_helpers import (
    doomed_process,
    open_runs,
    start,
    sweep,
    sweeper,
    worker,
)

HARNESS = [sys.executable, "-c", "from cli.main import app; app()"]
ROOT = Path(__file__).resolve().parents[3]


# -- proving a process dead ---------------------------------------------------------------------


def test_only_a_process_of_this_machine_that_no_longer_runs_is_proved_dead() -> None:
    mine = process_identity(os.getpid())
    assert mine and not proven_dead(mine)
    boot, namespace, pid, started = mine.rsplit("/", 3)
    assert proven_dead(f"{boot}/{namespace}/{pid}/{int(started) + 1}")  # the pid was reused
    assert not proven_dead(f"another-boot/{namespace}/{pid}/{started}")  # another machine
    assert not proven_dead(f"{boot}/1/{pid}/{started}")  # another pid namespace
    assert not proven_dead("") and not proven_dead("not/an/identity")


def test_a_killed_process_is_proved_dead_before_its_lease_expires(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    with doomed_process() as identity:
        leases.beat(worker("killed", identity), ttl=3600)
        run_id = start(store, "killed")
        assert not proven_dead(identity)
        assert sweep(store, engine, ahead=timedelta(0)).live == 1  # its process still runs
    assert proven_dead(identity)
    (ended,) = sweep(store, engine, ahead=timedelta(0)).ended  # young, lease fresh: still ended

    assert (ended.run_id, ended.liveness) == (run_id, Liveness.DEAD)
    assert ended.termination.reason is FailureCode.WORKER_LOST


def test_a_heartbeat_keeps_a_live_lease_and_the_runs_name_its_worker(
    store: HarnessStore, engine: Engine, settings: Settings, leases: SqlLeases
) -> None:
    heartbeat = start_heartbeat(settings, store, engine)
    try:
        me = heartbeat.worker.worker_id
        assert heartbeat.beats == 1  # the lease exists before any run starts
        assert leases.verdicts([me]) == {me: Liveness.LIVE}
        run_id, _ = store.start_run("ops", QUERY, datetime.now(UTC) + timedelta(hours=1))
        assert store.run_started(run_id).worker == me == store.get_run(run_id).worker
        assert f":{os.getpid()}:" in me
    finally:
        heartbeat.close()
    assert sweep(store, engine, ahead=timedelta(days=1)).live == 1  # closed, not yet expired


def test_a_worker_whose_lease_is_not_renewed_starts_no_runs(
    services: Services, store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    heartbeat = Heartbeat(leases, worker("me"), ttl=1.0).start()
    try:
        with scripted(services, "conclusion_supported") as made:
            dispatcher = RunDispatcher(
                made.service, 2, lambda _session: "", unsure=heartbeat.unsure
            )
            assert heartbeat.unsure() is None
            started = dispatcher.submit("s-1", QUERY)  # the lease holds: admitted
            with engine.begin() as connection:  # the lease can no longer be written
                worker_lease.drop(connection)
            _until(lambda: heartbeat.unsure() is not None)  # beats (every 1/3 s) now fail
            _until(lambda: started.run_id not in dispatcher.executing())
            head = store.head()
            with pytest.raises(StoreUnavailableError, match="has not renewed its lease"):
                dispatcher.submit("s-2", QUERY)
            assert store.head() == head  # nothing was recorded
            dispatcher.close()
    finally:
        heartbeat.close()
    assert store.get_run(started.run_id).termination is not None


def _until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll ``condition`` until it holds (bounded): a condition, not a sleep, decides."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never came to hold"
        time.sleep(0.01)


def test_the_loop_sweeps_at_once_and_survives_a_failed_sweep(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    leases.beat(worker("gone"), ttl=0)
    run_id = start(store, "gone")
    Projector(store, engine).catch_up()
    calls = 0

    def flaky() -> list[Unfinished]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise StoreUnavailableError("the database is away")
        return open_runs(engine)

    each = sweeper(store, engine)
    each.unfinished = flaky
    loop = RecoveryLoop(each, interval=0.05, settle=0).start()
    try:
        deadline = time.monotonic() + 30
        while not store.get_run(run_id).is_finished:  # another thread's progress: poll it
            assert time.monotonic() < deadline, "the loop never ended the orphan"
            time.sleep(0.02)
    finally:
        loop.close()
    assert calls >= 2 and loop.sweeps >= 1


def test_silence_is_not_trusted_until_the_database_has_answered_for_a_while(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    """Right after start-up or an outage, lapsed leases may be live workers yet to beat again."""
    leases.beat(worker("lapsed"), ttl=0)
    lapsed = start(store, "lapsed")
    with doomed_process() as identity:
        leases.beat(worker("killed", identity), ttl=3600)
        killed = start(store, "killed")
    Projector(store, engine).catch_up()

    cautious = sweeper(store, engine).sweep(trust_silence=False)
    assert [r.run_id for r in cautious.ended] == [killed] and cautious.waiting == 1
    assert store.get_run(lapsed).state is RunState.RUNNING

    assert not RecoveryLoop(sweeper(store, engine), 0.05, settle=3600).trusts_silence()
    assert RecoveryLoop(sweeper(store, engine), 0.05, settle=0).trusts_silence()


def test_harness_runs_recover_prints_what_it_ended(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    with bootstrap(sqlite_settings, create=True) as services:
        store, engine = services.store, services.engine
        Projector(store, engine).ensure_tracking()
        with doomed_process() as identity:
            SqlLeases(engine).beat(worker("killed", identity), ttl=3600)
        old = start(store, "killed", deadline_in=timedelta(seconds=-1))  # its deadline passed
        Projector(store, engine).catch_up()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env |= {"HARNESS_DATABASE_URL": sqlite_settings.database_url, "PYTHONPATH": str(ROOT)}
    env["COLUMNS"] = "250"  # the table's full width

    done = subprocess.run(
        [*HARNESS, "runs", "recover"], env=env, cwd=tmp_path, capture_output=True, text=True
    )

    assert done.returncode == 0, done.stderr
    assert str(old) in done.stdout and "DEADLINE_EXCEEDED" in done.stdout
    assert "ended 1 run(s) of lost workers" in " ".join(done.stderr.split())
    again = subprocess.run(
        [*HARNESS, "runs", "recover"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert again.returncode == 0 and "ended 0 run(s)" in " ".join(again.stderr.split())


def test_a_run_started_before_workers_were_recorded_names_none(
    store: HarnessStore, engine: Engine
) -> None:
    run_id = start(store, "host:1:ab")
    (stored,) = store.recorder.select_events(run_id)
    v2_state = json.loads(stored.state)
    v2_state.pop("_chain", None)  # a stored link only covers the event it was made for
    assert (v2_state.pop("worker"), v2_state["class_version"]) == ("host:1:ab", 3)
    v2_state["class_version"] = 2
    old = uuid4()
    store.recorder.insert_events([StoredEvent(old, 1, stored.topic, json.dumps(v2_state).encode())])

    assert store.run_started(old).worker == store.get_run(old).worker == ""
    (ended,) = [r for r in sweep(store, engine).ended if r.run_id == old]
    assert (ended.worker, ended.liveness) == ("", Liveness.UNKNOWN)
