"""The event store on a real SQLite file and on the machine's PostgreSQL (parametrised)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent

from application.ports import StoreNotInitialisedError
from application.store import HarnessStore, events_of
from domain.collection import Collection
from domain.errors import (
    ConcurrentWriteError,
    IllegalTransitionError,
    RunNotActiveError,
    SessionNotYoursError,
    UnknownAggregateError,
)
from domain.grounding import Citation
from domain.release_states import FallbackType, ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.session import Session
from domain.states import (
    BudgetKind,
    CancellationReason,
    FailureCode,
    Intent,
    ModelStepPurpose,
    RunState,
)
from domain.tool_invocation import ToolInvocation
from domain.tool_states import EvidenceStatus, GainSource, InformationGain, ToolRejectionCode
from domain.values import Budget, Fact
from infrastructure.eventstore import init_store, open_store
from infrastructure.settings import Settings


def _deadline() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def _successful_diagnosis(store: HarnessStore) -> tuple[Run, Collection, ToolInvocation]:
    """A whole diagnosis that touches every aggregate and most event types, saved in boundaries."""
    run_id, _ = store.start_run("session-1", "why is checkout slow?", _deadline())
    store.start_collection(run_id)
    run = store.get_run(run_id)
    run.attempt_routing()
    run.decide_routing(Intent.DIAGNOSIS)
    run.record_model_step(ModelStepPurpose.AGENT, 120, 40, 15)
    run.charge(BudgetKind.TOOL_CALLS, 1, "logs")
    invocation = ToolInvocation.begin(
        run_id, "logs", "checkout|2026-12-01", {"service": "checkout"}
    )
    store.save_all(run, invocation)
    invocation.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "p99 latency 2.4s after deploy 42")
    run.charge(BudgetKind.BYTES, 31, str(invocation.id))
    collection = store.get_collection(run_id)
    fact = Fact("latency rose after deploy 42", (Citation(str(invocation.id), "deploy 42"),))
    collection.record_gain(InformationGain.GAINED, GainSource.AGENT, (fact,), invocation.id)
    store.save_all(run, invocation, collection)
    run.reject_tool_request("shell", ToolRejectionCode.NOT_READ_ONLY, "writes are not allowed")
    run.check_evidence(has_conclusion=True, valid=True)
    run.attempt_semantic_guard()
    run.record_model_step(ModelStepPurpose.JUDGE, 80, 5, 9)
    run.decide_semantic_guard(SemanticVerdict.SUPPORTED)
    run.decide_release(ReleaseOutcome.SUCCESS, None, {"conclusion": "deploy 42", "refs": [1, 2]})
    run.complete()
    run.finish(datetime.now(UTC))
    store.save_all(run)
    return run, collection, invocation


def test_every_event_survives_a_round_trip_with_its_types(store: HarnessStore) -> None:
    run, collection, invocation = _successful_diagnosis(store)
    for aggregate_id in (run.id, collection.id, invocation.id):
        stored = events_of(store, aggregate_id)
        replayed = None
        for event in stored:
            replayed = event.mutate(replayed)
        assert replayed is not None
        assert replayed.__dict__ | {"_pending_events": []} == vars(
            store.repository.get(aggregate_id)
        ) | {"_pending_events": []}
    loaded = store.get_run(run.id)
    assert loaded.state is RunState.SUCCESS
    assert loaded.finished_outcome is ReleaseOutcome.SUCCESS
    assert loaded.usage == Budget(model_calls=2, tool_calls=1, tokens=245, bytes=31)
    assert store.get_collection(run.id).facts[0].references == (str(invocation.id),)
    reloaded_invocation = store.get_invocation(invocation.id)
    assert reloaded_invocation.evidence_status is EvidenceStatus.EVIDENCE_FOUND
    assert reloaded_invocation.is_referenceable


def test_aggregates_of_one_boundary_are_saved_in_one_transaction(store: HarnessStore) -> None:
    run_id, start = store.start_run("s", "q", _deadline())
    store.start_collection(run_id)
    run = store.get_run(run_id)
    run.attempt_routing()
    run.decide_routing(Intent.DIAGNOSIS)
    invocation = ToolInvocation.begin(run_id, "metrics", "checkout", {})
    collection = store.get_collection(run_id)
    collection.record_gain(InformationGain.NO_GAIN, GainSource.HARNESS)
    head_before = store.head()
    position = store.save_all(run, invocation, collection)
    assert position == head_before + 4  # positions of one boundary are contiguous
    assert store.head() == position


def test_a_conflict_on_one_stream_appends_nothing_of_the_boundary(store: HarnessStore) -> None:
    run_id, _ = store.start_run("s", "q", _deadline())
    store.start_collection(run_id)
    stale_collection = store.get_collection(run_id)
    other = store.get_collection(run_id)
    other.record_violation("no progress report")
    store.save_all(other)
    head = store.head()
    run = store.get_run(run_id)
    run.attempt_routing()
    stale_collection.record_violation("no progress report")
    with pytest.raises(ConcurrentWriteError):
        store.save_all(run, stale_collection)
    assert store.head() == head
    assert store.get_run(run_id).routing_attempts == 0


def test_budget_exhaustion_stops_the_collection_in_the_same_save(store: HarnessStore) -> None:
    limits = Budget(model_calls=5, tool_calls=5, tokens=100, bytes=100)
    run_id, _ = store.start_run("s", "q", _deadline(), limits)
    store.start_collection(run_id)
    position = store.exhaust_budget(run_id, BudgetKind.TOKENS).position
    collection = store.get_collection(run_id)
    assert store.get_run(run_id).state is RunState.BUDGET_EXHAUSTED
    assert collection.stop_reason is not None and collection.stop_reason.value == (
        "BUDGET_LIMIT_REACHED"
    )
    assert collection.state.value == "COLLECTING"  # never SATURATED by budget
    assert position == store.head()


def test_terminal_commands_are_first_terminal_wins(store: HarnessStore) -> None:
    run_id, _ = store.start_run("s", "q", _deadline())
    first = store.time_out(run_id)
    assert first.termination.state is RunState.TIMED_OUT
    for later in (
        store.cancel(run_id, CancellationReason.USER_REQUESTED),
        store.fail(run_id, FailureCode.MODEL_FAILED),
        store.exhaust_budget(run_id, BudgetKind.TOKENS),
        store.complete(run_id),
    ):
        assert later.termination == first.termination
        assert later.position is None
    types = [type(e).__name__ for e in events_of(store, run_id)]
    assert types == ["RunStarted", "RunTerminated", "CancellationRequested"]


def test_work_on_a_terminated_run_is_refused_and_appends_nothing(store: HarnessStore) -> None:
    run_id, _ = store.start_run("s", "q", _deadline())
    store.cancel(run_id, CancellationReason.CLIENT_DISCONNECTED)
    run = store.get_run(run_id)
    with pytest.raises(RunNotActiveError) as caught:
        run.record_model_step(ModelStepPurpose.AGENT, 1, 1, 1)
    assert caught.value.aggregate_id == run_id and repr(run_id) in str(caught.value)
    assert store.save_all(run) is None
    with pytest.raises(RunNotActiveError):
        store.start_collection(run_id)


def test_a_run_has_one_collection(store: HarnessStore) -> None:
    run_id, _ = store.start_run("s", "q", _deadline())
    store.start_collection(run_id)
    head = store.head()
    with pytest.raises(IllegalTransitionError, match="already has its collection"):
        store.start_collection(run_id)
    assert store.head() == head
    racing = Collection.start(run_id)  # a second process that did not see the first
    with pytest.raises(ConcurrentWriteError):
        store.save_all(racing)


def test_unknown_ids_raise_a_domain_error_naming_the_id(store: HarnessStore) -> None:
    missing = uuid4()
    for read in (store.get_run, store.get_invocation, store.get_collection):
        with pytest.raises(UnknownAggregateError) as caught:
            read(missing)
        assert repr(caught.value.aggregate_id) in str(caught.value)
    with pytest.raises(UnknownAggregateError):
        store.cancel(missing, CancellationReason.USER_REQUESTED)
    run_id, _ = store.start_run("s", "q", _deadline())
    with pytest.raises(UnknownAggregateError, match="not a tool invocation"):
        store.get_invocation(run_id)


def test_a_version_1_event_is_upcast_on_load(store: HarnessStore) -> None:
    run_id, _ = store.start_run("s", "q", _deadline())
    assert Run.ToolRequestRejected.class_version == 2
    v1_state = {
        "timestamp": {"_type_": "datetime_iso", "_data_": datetime.now(UTC).isoformat()},
        "tool": "logs",
        "code": {"_type_": "ToolRejectionCode", "_data_": "AUTH"},
    }
    topic = "domain.run:Run.ToolRequestRejected"
    store.recorder.insert_events([StoredEvent(run_id, 2, topic, json.dumps(v1_state).encode())])
    rejected = events_of(store, run_id)[-1]
    assert isinstance(rejected, Run.ToolRequestRejected)
    assert (rejected.tool, rejected.code, rejected.detail) == ("logs", ToolRejectionCode.AUTH, "")
    assert store.get_run(run_id).version == 2


def test_a_run_started_before_owners_were_recorded_belongs_to_no_one(
    store: HarnessStore,
) -> None:
    run_id, _ = store.start_run("s", "q", _deadline(), owner="ann")
    (stored,) = store.recorder.select_events(run_id)
    v1_state = json.loads(stored.state)
    popped = (v1_state.pop("owner"), v1_state.pop("worker"), v1_state.pop("class_version"))
    assert popped == ("ann", "", 3)
    old_run = uuid4()
    store.recorder.insert_events(
        [StoredEvent(old_run, 1, stored.topic, json.dumps(v1_state).encode())]
    )
    loaded = store.get_run(old_run)
    assert (loaded.owner, loaded.session_id, loaded.query) == ("", "s", "q")
    assert store.get_run(run_id).owner == "ann"


def test_release_decisions_keep_their_fallback_type(store: HarnessStore) -> None:
    run_id, _ = store.start_run("s", "q", _deadline())
    run = store.get_run(run_id)
    run.attempt_routing()
    run.decide_routing(Intent.DIAGNOSIS)
    run.check_evidence(has_conclusion=False, valid=True)
    run.decide_release(ReleaseOutcome.FALLBACK, FallbackType.MISSING_REQUIRED_CONTEXT, {"m": []})
    run.complete()
    store.save_all(run)
    loaded = store.get_run(run_id)
    assert loaded.release == (ReleaseOutcome.FALLBACK, FallbackType.MISSING_REQUIRED_CONTEXT)


def test_a_service_process_refuses_to_start_before_db_init(settings: Settings) -> None:
    with pytest.raises(StoreNotInitialisedError, match="harness db init"):
        open_store(settings)


def test_the_store_ignores_the_process_environment(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.popo")
    monkeypatch.setenv("HARNESS_PERSISTENCE_MODULE", "eventsourcing.popo")
    monkeypatch.setenv("CREATE_TABLE", "n")
    store = init_store(settings)
    try:
        run_id, _ = store.start_run("s", "q", _deadline())
        assert store.get_run(run_id).session_id == "s"
        assert type(store.recorder).__module__ != "eventsourcing.popo"
    finally:
        store.close()
    reopened = open_store(settings)  # a second process sees the same durable log
    try:
        assert reopened.get_run(run_id).query == "q"
    finally:
        reopened.close()


def test_a_session_belongs_to_its_first_runs_owner(store: HarnessStore) -> None:
    first, _ = store.start_run("shared", "q", _deadline(), owner="ann")
    again, _ = store.start_run("shared", "q2", _deadline(), owner="ann")
    head = store.head()
    with pytest.raises(SessionNotYoursError, match="'shared' belongs to someone else"):
        store.start_run("shared", "q3", _deadline(), owner="bob")
    assert store.head() == head  # neither bob's run nor a claim was recorded
    claim = store.get_session("shared")
    assert claim is not None and (claim.owner, claim.session_id) == ("ann", "shared")
    assert store.get_session("nobody's") is None
    unowned, _ = store.start_run("shared", "q4", _deadline())  # no owner: no claim is checked
    assert store.get_run(unowned).owner == ""


def test_two_first_runs_racing_for_one_session_claim_it_once(store: HarnessStore) -> None:
    """Both read "no claim yet"; the second claim conflicts in the store and is refused."""
    seen_none = threading.Barrier(2)
    original = store.get_session

    def racing(session_id: str) -> Session | None:
        found = original(session_id)
        if found is None and seen_none.n_waiting < 2 and not seen_none.broken:
            try:
                seen_none.wait(timeout=5)
            except threading.BrokenBarrierError:
                pass
        return found

    store.get_session = racing  # type: ignore[method-assign]
    outcomes: dict[str, object] = {}

    def start(owner: str) -> None:
        try:
            outcomes[owner] = store.start_run("contested", owner, _deadline(), owner=owner)[0]
        except SessionNotYoursError as error:
            outcomes[owner] = error

    threads = [threading.Thread(target=start, args=(o,)) for o in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    store.get_session = original  # type: ignore[method-assign]
    winner = original("contested")
    assert winner is not None
    loser = "bob" if winner.owner == "ann" else "ann"
    assert isinstance(outcomes[winner.owner], UUID)
    assert isinstance(outcomes[loser], SessionNotYoursError)
