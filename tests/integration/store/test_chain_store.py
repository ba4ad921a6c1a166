"""Chain links written by the real stores: every append links to its stream, from any process."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import SecretStr

from application.audit.records import run_records, store_links, store_records
from bootstrap.composition import Services, bootstrap
from domain.states import CancellationReason, RunState
from tests.integration._projection_helpers import run_scenario
from tests.log_checks import check_chain

if TYPE_CHECKING:
    from application.store import HarnessStore
    from infrastructure.settings import Settings

KEY = "an audit key of the tests, long enough"


def test_every_event_of_a_real_log_is_linked(services: Services, store: HarnessStore) -> None:
    for name in ("conclusion_supported", "saturated", "budget_safe_progress"):
        run_scenario(services, name, session_id=f"s-{name}")
    records = list(store_records(store))
    assert len(records) > 60
    assert all(r.hash is not None and r.hash.startswith("sha256:") for r in records)
    assert check_chain(records) == []
    assert {r.type for r in records} >= {"RUN_STARTED", "TOOL_INVOCATION_READY", "RUN_FINISHED"}
    # what a checkpoint reads of the log is what the records say, from any position
    links = [(r.position, r.stream, r.version, r.hash) for r in records]
    assert list(store_links(store)) == links
    assert list(store_links(store, links[9][0], 25)) == links[10:35]


def test_another_process_appending_to_a_stream_links_to_its_head(
    services: Services, store: HarnessStore, settings: Settings
) -> None:
    run_scenario(services, "conclusion_supported")
    deadline = datetime.now(UTC) + timedelta(minutes=5)
    started, _ = store.start_run("s-2", "why is checkout slow?", deadline)
    other = bootstrap(settings)  # a fresh mapper: it knows no stream's head, reads it
    try:
        cancelled = other.store.cancel(started, CancellationReason.USER_REQUESTED)
    finally:
        other.close()
    assert cancelled.position is not None
    assert cancelled.termination.state is RunState.CANCELLED
    mine = run_records(store, started)
    assert [r.type for r in mine] == ["RUN_STARTED", "CANCELLATION_REQUESTED", "RUN_TERMINATED"]
    assert check_chain(store_records(store)) == []


def test_keyed_links_verify_only_with_the_key(settings: Settings) -> None:
    with bootstrap(settings.model_copy(update={"audit_key": SecretStr(KEY)}), create=True) as keyed:
        run_scenario(keyed, "limited_checks")
        records = list(store_records(keyed.store))
    assert all(r.hash is not None and r.hash.startswith("hmac-sha256:") for r in records)
    assert check_chain(records, KEY.encode()) == []
    assert len(check_chain(records, b"not the key")) == len(records)


def test_a_run_export_holds_its_whole_streams(services: Services, store: HarnessStore) -> None:
    first = run_scenario(services, "conclusion_supported", session_id="a")
    run_scenario(services, "limited_checks", session_id="b")
    mine = run_records(store, first.run_id)
    streams = {r.stream for r in mine}
    assert str(first.run_id) in streams and len(streams) >= 3  # run, collection, tools
    assert [r.position for r in mine] == sorted(r.position for r in mine)
    everything = [r for r in store_records(store) if r.stream in streams]
    assert mine == everything
    assert check_chain(mine) == []


def test_a_mapper_keeps_at_most_its_bound_of_heads_and_links_stay_right_past_it(
    services: Services, store: HarnessStore
) -> None:
    store.chain.kept = 2  # far fewer than one run's streams: heads are dropped mid-run
    for name in ("conclusion_supported", "limited_checks", "saturated"):
        run_scenario(services, name, session_id=f"s-{name}")
        assert store.chain.remembered <= 2
    records = list(store_records(store))
    assert len({r.stream for r in records}) > 2 * 3  # every run wrote more streams than kept
    assert check_chain(records) == []  # a dropped head was read back from the store
