"""Crash recovery on both stores: which runs a sweep ends, how, and what their feeds show."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from uuid import UUID

from sqlalchemy import Engine, select

from application.explain import explain_run
from application.recovery import Liveness, RecoverySweep, SweepReport
from application.store import HarnessStore
from bootstrap.composition import Services, bootstrap
from domain.run import Run
from domain.states import CancellationReason, FailureCode, RunState
from infrastructure.eventstore import store_environment
from infrastructure.leases import SqlLeases, worker_lease
from infrastructure.settings import Settings
from projections.runner import Projector
from tests.helpers import scripted
from tests.integration._projection_helpers import QUERY
from tests.integration._recovery_helpers import feed, start, sweep, sweeper, types, worker

# -- which runs are ended, and how --------------------------------------------------------------


def test_an_orphan_of_an_expired_worker_ends_failed_worker_lost(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    leases.beat(worker("gone"), ttl=0)
    run_id = start(store, "gone")

    report = sweep(store, engine)

    (ended,) = report.ended
    assert (ended.run_id, ended.worker, ended.liveness) == (run_id, "gone", Liveness.EXPIRED)
    assert (ended.termination.state, ended.termination.reason) == (
        RunState.FAILED,
        FailureCode.WORKER_LOST,
    )
    run = store.get_run(run_id)
    assert run.is_finished and run.state is RunState.FAILED
    assert types(store, run_id) == ["RunStarted", "RunTerminated", "RunFinished"]
    assert ended.position == store.head()


def test_an_orphan_past_its_deadline_ends_timed_out(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    leases.beat(worker("gone"), ttl=0)
    run_id = start(store, "gone", deadline_in=timedelta(seconds=1))

    (ended,) = sweep(store, engine).ended

    assert (ended.termination.state, ended.termination.reason) == (
        RunState.TIMED_OUT,
        CancellationReason.DEADLINE_EXCEEDED,
    )
    assert types(store, run_id) == [
        "RunStarted",
        "RunTerminated",
        "CancellationRequested",
        "RunFinished",
    ]


def test_runs_of_live_workers_are_never_touched(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    leases.beat(worker("alive"), ttl=3600)
    run_id = start(store, "alive", deadline_in=timedelta(seconds=1))  # even past its deadline
    head = store.head()

    report = sweep(store, engine, ahead=timedelta(days=1))

    assert (report.ended, report.live, report.waiting) == ([], 1, 0)
    assert store.head() == head and store.get_run(run_id).state is RunState.RUNNING


def test_a_silent_worker_s_young_run_waits_one_ttl(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    """A worker paused past its lease may start a run before its next beat: give it a TTL."""
    leases.beat(worker("paused"), ttl=0)
    run_id = start(store, "paused")

    young = sweep(store, engine, ahead=timedelta(0))
    assert (young.ended, young.waiting) == ([], 1)
    assert store.get_run(run_id).state is RunState.RUNNING

    old = sweep(store, engine)
    assert [r.run_id for r in old.ended] == [run_id]


def test_a_run_without_a_worker_or_lease_is_ended_once_a_ttl_old(
    store: HarnessStore, engine: Engine
) -> None:
    legacy = start(store, "")  # recorded before runs named their worker
    pruned = start(store, "lease-long-gone")

    waiting = sweep(store, engine, ahead=timedelta(0))
    assert (waiting.ended, waiting.waiting) == ([], 2)

    ended = {r.run_id: r for r in sweep(store, engine).ended}
    assert set(ended) == {legacy, pruned}
    assert {r.liveness for r in ended.values()} == {Liveness.UNKNOWN}
    assert all(r.termination.reason is FailureCode.WORKER_LOST for r in ended.values())


def test_the_sweeper_ends_its_own_runs_only_when_it_no_longer_executes_them(
    store: HarnessStore, engine: Engine
) -> None:
    executing = start(store, "me")
    lost = start(store, "me")  # e.g. its execution could not record the end

    report = sweep(store, engine, me="me", executing=lambda: {executing})

    assert [(r.run_id, r.liveness) for r in report.ended] == [(lost, Liveness.NOT_EXECUTING)]
    assert report.live == 1 and store.get_run(executing).state is RunState.RUNNING


def test_a_terminated_run_whose_worker_died_before_finishing_is_finished(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    leases.beat(worker("gone"), ttl=0)
    timed_out = start(store, "gone")
    store.time_out(timed_out)  # the worker's deadline check, then it died
    cancelled = start(store, "gone")
    store.cancel(cancelled, CancellationReason.USER_REQUESTED)  # `harness runs cancel`

    ended = {r.run_id: r.termination for r in sweep(store, engine).ended}

    assert ended[timed_out].state is RunState.TIMED_OUT
    assert ended[cancelled].state is RunState.CANCELLED
    for run_id in (timed_out, cancelled):
        assert types(store, run_id).count("RunTerminated") == 1
        assert types(store, run_id)[-1] == "RunFinished"
    assert [kind for kind, _ in feed(store, engine, timed_out)][-2:] == ["failure", "done"]
    assert [kind for kind, _ in feed(store, engine, cancelled)][-1] == "failure"  # no done


def test_expired_leases_are_pruned_and_live_ones_kept(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    leases.beat(worker("gone"), ttl=0)
    leases.beat(worker("alive"), ttl=3600)

    sweep(store, engine)

    with engine.connect() as connection:
        kept = connection.scalars(select(worker_lease.c.worker_id)).all()
    assert kept == ["alive"]


# -- races: first terminal wins ------------------------------------------------------------------


def test_two_sweepers_racing_end_each_run_exactly_once(
    store: HarnessStore, engine: Engine, leases: SqlLeases, settings: Settings
) -> None:
    leases.beat(worker("gone"), ttl=0)
    run_ids = {start(store, "gone") for _ in range(12)}
    Projector(store, engine).catch_up()
    other = bootstrap(settings)
    sweepers = [sweeper(store, engine), sweeper(other.store, engine)]
    gate = threading.Barrier(2)
    reports: list[SweepReport] = []

    def race(each: RecoverySweep) -> None:
        gate.wait(timeout=30)
        reports.append(each.sweep())

    try:
        threads = [threading.Thread(target=race, args=(s,)) for s in sweepers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        other.close()

    ended = [r.run_id for report in reports for r in report.ended]
    assert len(reports) == 2 and sorted(ended) == sorted(run_ids)  # each once, by one of them
    for run_id in run_ids:
        kinds = types(store, run_id)
        assert (kinds.count("RunTerminated"), kinds.count("RunFinished")) == (1, 1)
        assert [kind for kind, _ in feed(store, engine, run_id)] == ["metadata", "failure", "done"]


class WorkerFinishesFirst(HarnessStore):
    """A sweeper's store: between its read of the run and its write, the worker ends the run."""

    name = "Harness"  # the same tables as the store's
    worker_store: HarnessStore

    def get_run(self, run_id: UUID) -> Run:
        found = super().get_run(run_id)
        if not getattr(self, "raced", False):
            self.raced = True
            slow = self.worker_store.get_run(run_id)
            slow.fail(FailureCode.MODEL_FAILED)
            slow.finish(datetime.now(UTC))
            self.worker_store.save_all(slow)
        return found


def test_a_slow_worker_finishing_at_the_same_moment_keeps_its_own_end(
    store: HarnessStore, engine: Engine, leases: SqlLeases, settings: Settings
) -> None:
    leases.beat(worker("slow"), ttl=0)
    run_id = start(store, "slow")
    Projector(store, engine).catch_up()
    racing = WorkerFinishesFirst(env=store_environment(settings, create_tables=False))
    racing.worker_store = store
    try:
        report = sweeper(racing, engine).sweep()
    finally:
        racing.close()

    assert report.ended == [] and racing.conflicts_resolved == 1
    run = store.get_run(run_id)
    assert (run.state, run.termination and run.termination.reason) == (
        RunState.FAILED,
        FailureCode.MODEL_FAILED,
    )
    assert types(store, run_id) == ["RunStarted", "RunTerminated", "RunFinished"]


def test_a_live_worker_whose_lease_lapsed_is_fenced_off_its_swept_run(
    services: Services, store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    """The worker still executes (its model hangs) when the sweep ends its run: it stops there."""
    leases.beat(worker("stalled"), ttl=0)
    with scripted(services, "client_disconnected") as made:
        store.worker = "stalled"
        run, _ = made.service.begin("ops", QUERY)
        run_id = run.id
        results = []
        executing = threading.Thread(target=lambda: results.append(made.service.execute(run)))
        executing.start()
        assert made.provider.hanging.wait(timeout=60)
        (ended,) = sweep(store, engine).ended
        made.release()  # its late answer arrives after the sweep
        executing.join(timeout=60)

    assert ended.termination.reason is FailureCode.WORKER_LOST
    (result,) = results
    assert result.termination == ended.termination  # the worker got the sweep's end back
    kinds = types(store, run_id)
    assert (kinds.count("RunTerminated"), kinds.count("RunFinished")) == (1, 1)
    assert kinds[-2:] == ["RunTerminated", "RunFinished"]  # nothing after the end


# -- what a swept run looks like ------------------------------------------------------------------


def test_a_swept_run_s_feed_ends_with_failure_then_done(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    leases.beat(worker("gone"), ttl=0)
    run_id = start(store, "gone")
    sweep(store, engine)

    entries = feed(store, engine, run_id)

    assert [kind for kind, _ in entries] == ["metadata", "failure", "done"]
    failure, done = entries[1][1], entries[2][1]
    assert failure["termination_state"] == "FAILED"
    assert failure["termination_reason"] == "WORKER_LOST"
    assert failure["release_outcome"] == done["release_outcome"] == "FAILED"
    assert {failure["run_id"], done["run_id"]} == {str(run_id)}


def test_explain_says_the_worker_was_lost(
    store: HarnessStore, engine: Engine, leases: SqlLeases
) -> None:
    leases.beat(worker("gone"), ttl=0)
    run_id = start(store, "gone")
    sweep(store, engine)

    explanation = explain_run(store, run_id)

    assert explanation.termination_state == "FAILED"
    assert explanation.termination_reason == "WORKER_LOST"
    texts = " ".join(answer.answer for answer in explanation.answers)
    assert "the worker executing it was lost" in texts
