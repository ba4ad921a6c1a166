"""Writers of realistic logs for the projection process tests (importable by spawned interpreters).

Every run goes through several small transactions, the way the runtime saves it, and touches each
projection: a Run stream, and for diagnoses a Collection and a ToolInvocation stream whose later
events name no run (the trace must find it), several runs per session (turn numbering), and runs
that end SUCCESS, FAILED or CANCELLED.
"""

from __future__ import annotations

import traceback
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from bootstrap.composition import bootstrap
from domain.release_states import ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    ChatApplicationStatus,
    FailureCode,
    Intent,
    ModelStepPurpose,
)
from domain.tool_invocation import ToolInvocation
from domain.tool_states import EvidenceStatus, GainSource, InformationGain
from infrastructure.settings import Settings

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event
    from queue import Queue

    from application.store import HarnessStore

SESSIONS = 7
"""Runs share a few sessions, so a session's turns are numbered across many batches."""


def _chat(store: HarnessStore, run: Run) -> None:
    run.decide_routing(Intent.SYSTEM_CHAT)
    run.change_status(ChatApplicationStatus.SYSTEM_RESPONDING)
    store.save_all(run)
    run.record_model_step(ModelStepPurpose.ANSWER, 120, 30, 5)
    run.decide_release(ReleaseOutcome.SUCCESS, None, {"text": "all green"})
    store.save_all(run)
    run.complete()
    run.finish(datetime.now(UTC))
    store.save_all(run)


def _diagnosis(store: HarnessStore, run: Run, supported: bool) -> None:
    run.decide_routing(Intent.DIAGNOSIS)
    run.change_status(ChatApplicationStatus.DIAGNOSIS_RUNNING)
    collection = store.new_collection(run.id)
    store.save_all(run, collection)
    invocation = ToolInvocation.begin(run.id, "service_status", "svc:checkout", {"name": "x"})
    run.charge(BudgetKind.TOOL_CALLS, 1, str(invocation.id))
    store.save_all(run, invocation)
    invocation.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "checkout: 5xx rate 12%")
    collection.record_gain(InformationGain.GAINED, GainSource.AGENT, (), invocation.id)
    store.save_all(invocation, collection)
    run.record_model_step(ModelStepPurpose.AGENT, 900, 80, 12)
    if not supported:
        for _ in range(collection.no_gain_threshold):  # saturates: COLLECTION_STOP
            collection.record_gain(InformationGain.NO_GAIN, GainSource.HARNESS)
        store.save_all(run, collection)
        run.fail(FailureCode.MODEL_FAILED)
        run.finish(datetime.now(UTC))
        store.save_all(run)
        return
    store.save_all(run)
    run.check_evidence(has_conclusion=True, valid=True, verified_facts=1)
    run.attempt_semantic_guard()
    run.decide_semantic_guard(SemanticVerdict.SUPPORTED)
    run.change_status(ChatApplicationStatus.SAFETY_VALIDATING)
    store.save_all(run)
    run.decide_release(ReleaseOutcome.SUCCESS, None, {"conclusion": f"run {run.id} is fine"})
    run.complete()
    run.finish(datetime.now(UTC))
    store.save_all(run)


def _cancelled(store: HarnessStore, run: Run) -> None:
    run.decide_routing(Intent.KNOWLEDGE_QUERY)
    run.change_status(ChatApplicationStatus.KNOWLEDGE_SEARCHING)
    store.save_all(run)
    run.cancel(CancellationReason.USER_REQUESTED)
    run.finish(datetime.now(UTC))
    store.save_all(run)


def append_runs(store: HarnessStore, runs: int, tag: str) -> None:
    """Append ``runs`` complete runs, each in several small transactions (about 9 events each)."""
    deadline = datetime.now(UTC) + timedelta(hours=1)
    for n in range(runs):
        run = Run.start(f"{tag}-session-{n % SESSIONS}", f"why is checkout slow? ({n})", deadline)
        run.attempt_routing()
        store.save_all(run)
        match n % 4:
            case 0:
                _chat(store, run)
            case 1:
                _diagnosis(store, run, supported=True)
            case 2:
                _diagnosis(store, run, supported=False)
            case _:
                _cancelled(store, run)


def write_in_two_halves(
    url: str,
    schema: str,
    runs: int,
    worker: int,
    halfway: Queue[tuple[int, str]],
    carry_on: Event,
    done: Queue[tuple[int, str]],
) -> None:
    """Append ``runs`` runs in two halves; between them report and wait for ``carry_on``."""
    try:
        services = bootstrap(Settings(database_url=url, database_schema=schema))
        append_runs(services.store, runs // 2, f"w{worker}a")
        halfway.put((worker, "ok"))
        if not carry_on.wait(timeout=120):
            raise TimeoutError("the test never let the writers carry on")
        append_runs(services.store, runs - runs // 2, f"w{worker}b")
        services.close()
        done.put((worker, "ok"))
    except Exception:  # reported to the parent, which fails the test with the traceback
        message = traceback.format_exc()
        halfway.put((worker, message))
        done.put((worker, message))
