"""The read side, built from real runs on real stores (SPEC §10-§13, §16, §17).

Scripted scenarios run through :class:`ChatService` on an SQLite file and a PostgreSQL schema; the
projections are read back with plain SQL and checked against the SPEC tables and against what the
aggregates themselves say: the ``diagnosis_run`` row of every outcome-table row, the SSE feed
rules, the trace timeline, the session turns and the daily analytics. Rebuilding from position 0
gives identical rows, two runners never apply a batch twice, and a reader can wait for its write.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime
from enum import Enum
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine, event

from application.chat import ChatResult
from application.store import HarnessStore, events_of
from bootstrap.composition import Overrides, Services, bootstrap
from domain.catalogue import EVENT_CLASSES, event_type_name
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import (
    CancellationReason,
    CompletionReason,
    FailureCode,
    Intent,
    TraceEventStatus,
    TracePhase,
)
from domain.tool_states import DiagnosisStopReason
from infrastructure.read_tables import (
    create_read_tables,
    diagnosis_run,
    read_schema,
    run_daily,
    session_turn,
    sse_event,
    sse_run,
    trace_event,
)
from infrastructure.settings import Settings
from projections.base import Committed, Positioned
from projections.runner import Projector, TrackingConflict, all_projections
from projections.sse_feed import SseFeed
from tests.integration._projection_helpers import (
    INTERLEAVED,
    LosesTheRace,
    collection_stop_reason,
    conclusions_of,
    count,
    dump,
    notifications,
    owner,
    plain,
    rows,
    run_fleet,
    run_row,
    run_scenario,
    session_time_zone,
    utc_day,
    value,
)
from tests.integration.runs.test_outcome_table import ROWS, SUCCESS_TRACE
from tests.integration.runs.test_outcome_table import Row as OutcomeRow

PUBLISHED = (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)
STATUS = {
    ReleaseOutcome.SUCCESS: "SUCCESS",
    ReleaseOutcome.FALLBACK: "SUCCESS",
    ReleaseOutcome.FAILED: "FAILED",
    ReleaseOutcome.CANCELLED: "CANCELLED",
}
"""SPEC §12: ``diagnosis_run.status`` from the ReleaseOutcome."""
STOP_REASONS = {
    "saturated": DiagnosisStopReason.INFORMATION_SATURATED,
    "protocol_stop": DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED,
    "budget_safe_progress": DiagnosisStopReason.BUDGET_LIMIT_REACHED,
    "budget_no_progress": DiagnosisStopReason.BUDGET_LIMIT_REACHED,
}
REASONS: dict[str, Enum] = {
    "timed_out": CancellationReason.DEADLINE_EXCEEDED,
    "budget_safe_progress": CancellationReason.BUDGET_EXHAUSTED,
    "budget_no_progress": CancellationReason.BUDGET_EXHAUSTED,
    "internal_failure": FailureCode.ROUTING_FAILED,
    "client_disconnected": CancellationReason.CLIENT_DISCONNECTED,
}
"""Termination reasons of the SPEC §10 rows; every other row completed."""
SSE_ORDER = re.compile(r"metadata( status)* (content|failure)( done)?")
PHASE_EVENTS = {
    "RUN": "RUN_STARTED APPLICATION_STATUS_CHANGED BUDGET_CHARGED BUDGET_EXHAUSTED"
    " CANCELLATION_REQUESTED RUN_TERMINATED RUN_FINISHED",
    "ROUTING": "ROUTING_ATTEMPT ROUTING_DECISION",
    "AGENT": "DRAFT_PROPOSED PASSAGES_RETRIEVED ANSWER_PROPOSED",
    "TOOL": "TOOL_REQUEST_REJECTED TOOL_INVOCATION_STARTED TOOL_INVOCATION_READY"
    " TOOL_INVOCATION_FAILED",
    "COLLECTION": "COLLECTION_STARTED TOOL_PROGRESS PROGRESS_PROTOCOL_VIOLATION COLLECTION_STOP"
    " STOP_REQUIRED_DELIVERED",
    "GUARD": "EVIDENCE_GUARD_INITIAL EVIDENCE_REPAIR EVIDENCE_GUARD_RECHECK"
    " SEMANTIC_GUARD_ATTEMPT SEMANTIC_GUARD_DECISION",
    "RELEASE": "RELEASE_DECISION",
}
"""The SPEC §13 phase of each event type; a model step's phase follows its purpose."""
PHASES = {kind: phase for phase, kinds in PHASE_EVENTS.items() for kind in kinds.split()}
STEP_PHASES = {"ROUTE": "ROUTING", "ANSWER": "AGENT", "AGENT": "AGENT"}
STEP_PHASES |= {"REPAIR": "GUARD", "JUDGE": "GUARD"}
ANALYTICS_TABLES = (
    "analytics_tool_call",
    "analytics_model_call",
    "analytics_guard_decision",
    "analytics_citation",
    "tool_stats",
    "tool_duration",
    "model_stats",
    "model_latency",
)
"""The analytics projection's tables that a finished fleet fills."""


@pytest.fixture
def fleet(services: Services, store: HarnessStore, engine: Engine) -> dict[str, ChatResult]:
    """Every SPEC §10 row plus runtime paths in one store, projected in batches of 7 after each."""
    follower = Projector(store, engine, batch_size=7)
    return run_fleet(services, follower.catch_up)


# -- 1. diagnosis_run, row by row of SPEC §10 ---------------------------------------------------


@pytest.mark.parametrize("row", ROWS, ids=[r.scenario for r in ROWS])
def test_each_outcome_row_becomes_its_diagnosis_run_row(
    services: Services, store: HarnessStore, engine: Engine, row: OutcomeRow
) -> None:
    result = run_scenario(services, row.scenario)
    Projector(store, engine).catch_up()
    db = run_row(engine, result.run_id)
    run = store.get_run(result.run_id)
    assert run.termination is not None and run.finished_outcome is row.outcome

    # The SPEC tables, explicitly.
    assert db["status"] == STATUS[row.outcome]
    assert db["release_outcome"] == row.outcome.value
    assert db["fallback_type"] == value(row.fallback)
    assert db["termination_state"] == row.state.value
    assert db["termination_reason"] == REASONS.get(row.scenario, CompletionReason.COMPLETED).value
    assert db["stop_reason"] == value(STOP_REASONS.get(row.scenario))
    assert (db["published_result"] is not None) is (row.scenario == "conclusion_supported")
    # The same, as the aggregates say it.
    fallback = run.release[1] if run.release and row.outcome is ReleaseOutcome.FALLBACK else None
    assert db["fallback_type"] == value(fallback)
    assert db["termination_state"] == run.termination.state.value
    assert db["termination_reason"] == run.termination.reason.value
    assert db["stop_reason"] == collection_stop_reason(store, result.run_id)
    assert (db["intent"], db["session_id"], db["query"]) == (
        value(run.intent),
        run.session_id,
        run.query,
    )
    usage = (db["model_calls"], db["tool_calls"], db["tokens_in"] + db["tokens_out"])
    assert usage == (run.usage.model_calls, run.usage.tool_calls, run.usage.tokens)
    assert db["finished_at"] is not None and db["duration_ms"] is not None
    _assert_safe_content(db, run, result, conclusions_of(row.scenario))


def _assert_safe_content(
    db: dict[str, Any], run: Run, result: ChatResult, conclusions: set[str]
) -> None:
    outcome = result.release_outcome
    assert db["safe_answer"] == (plain(result.content) if outcome in PUBLISHED else None)
    if run.intent is Intent.DIAGNOSIS and outcome is ReleaseOutcome.SUCCESS:
        assert run.published is not None
        assert db["published_result"] == plain(run.published)
        assert db["conclusion"] == run.published["conclusion"]
    else:
        assert db["published_result"] is None
    if outcome is ReleaseOutcome.FALLBACK:  # never the unverified conclusion
        assert db["conclusion"] is None and "conclusion" not in db["safe_answer"]
        published = json.dumps(db["safe_answer"])
        assert not [c for c in conclusions if c in published], published
    if outcome not in PUBLISHED:
        assert db["conclusion"] is None


@pytest.mark.parametrize(
    "name",
    [
        "paths/repair_succeeds",
        "paths/reject_budget",
        "paths/size_byte_budget",
        "paths/budget_spent_in_release",
    ],
)
def test_stop_reason_is_why_the_agent_stopped_calling_tools(
    services: Services, store: HarnessStore, engine: Engine, name: str
) -> None:
    """SPEC §7, §15: a run whose agent completed a draft has no stop reason.

    In ``budget_spent_in_release`` the agent drafted and the one repair call then spent the
    model-call budget: the run is BUDGET_EXHAUSTED, but its collection never stopped.
    """
    result = run_scenario(services, name)
    Projector(store, engine).catch_up()
    db = run_row(engine, result.run_id)

    collection = collection_stop_reason(store, result.run_id)
    assert db["stop_reason"] == collection, (
        f"{name}: diagnosis_run.stop_reason is {db['stop_reason']!r}, but the run's collection "
        f"says {collection!r} (termination {db['termination_state']})"
    )


# -- 2. rebuild equality ----------------------------------------------------------------------


def test_read_tables_of_another_definition_are_recreated_and_rebuilt(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_scenario(services, "conclusion_supported")
    projector = Projector(store, engine)
    projector.catch_up()
    before = dump(engine)
    assert create_read_tables(engine) is False  # same definition: nothing happens
    assert dump(engine) == before

    with engine.begin() as connection:  # as if an older version of the code had made them
        connection.execute(read_schema.update().values(fingerprint="an older definition"))
        connection.execute(diagnosis_run.update().values(query="stale"))
    assert create_read_tables(engine) is True
    assert all(not rows for name, rows in dump(engine).items() if name != "read_schema")
    assert Projector(store, engine).catch_up() == len(notifications(store))
    assert dump(engine) == before


def test_the_feed_and_the_rest_followed_apart_give_the_same_rows(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    """Live following runs the feed and the other tables as two runners; the result is the same.

    Each batch tells its listeners the range it applied: the ranges follow one another, and
    the feed entries its batches say they wrote are the feed's rows.
    """
    run_scenario(services, "conclusion_supported")
    run_scenario(services, "budget_no_progress")
    feed = Projector(store, engine, [SseFeed()], batch_size=5)
    rest = Projector(
        store, engine, [p for p in all_projections() if p.name != "sse_feed"], batch_size=7
    )
    batches: list[Committed] = []
    feed.listeners.append(batches.append)
    while feed.step() + rest.step():  # interleaved, at different paces
        pass
    ranges = [(batch.after, batch.last) for batch in batches]
    assert ranges[0][0] == 0 and ranges[-1][1] == store.head()
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    followed = dump(engine)
    entries = [entry for batch in batches for entry in batch.entries("sse_feed")]
    columns = ("run_id", "seq", "position", "event", "data")
    assert sorted([e[c] for c in columns] for e in entries) == sorted(
        [row[c] for c in columns] for row in followed["sse_event"]
    )
    assert Projector(store, engine).rebuild() == len(notifications(store))
    assert dump(engine) == followed


def test_a_rebuild_from_position_zero_gives_identical_rows(
    store: HarnessStore, engine: Engine, fleet: dict[str, ChatResult]
) -> None:
    followed = dump(engine)
    head, entries = store.head(), len(notifications(store))  # PostgreSQL ids may have gaps
    assert len(followed["diagnosis_run"]) == len(followed["session_turn"]) == len(fleet)
    assert len(followed["trace_event"]) == entries
    assert followed["run_daily"] and followed["sse_event"] and followed["trace_stream"]
    for analytics in ANALYTICS_TABLES:  # the fleet's runs leave rows in every one of them
        assert followed[analytics], analytics
    assert not followed["analytics_tool_open"]  # every invocation ended
    assert {t["position"] for t in followed["projection_tracking"]} == {head}

    rebuilder = Projector(store, engine, batch_size=1000)
    assert rebuilder.rebuild() == entries
    assert dump(engine) == followed
    for name in rebuilder.names:
        assert rebuilder.rebuild([name]) == entries
        assert dump(engine) == followed, name


# -- 3. the SSE feed --------------------------------------------------------------------------


def test_every_feed_follows_the_sse_rules(
    store: HarnessStore, engine: Engine, fleet: dict[str, ChatResult]
) -> None:
    for name, result in fleet.items():
        feed = rows(
            engine, sse_event, sse_event.c.run_id == str(result.run_id), order_by=[sse_event.c.seq]
        )
        kinds = [entry["event"] for entry in feed]
        assert SSE_ORDER.fullmatch(" ".join(kinds)), (name, kinds)
        assert [entry["seq"] for entry in feed] == list(range(1, len(feed) + 1))
        positions = [entry["position"] for entry in feed]
        assert positions == sorted(positions)
        identity = {"session_id": result.session_id, "run_id": str(result.run_id)}
        assert all({k: e["data"][k] for k in identity} == identity for e in feed), name
        statuses = [e.status.value for e in events_of(store, result.run_id) if _is_status(e)]
        assert [e["data"]["status"] for e in feed if e["event"] == "status"] == statuses
        (state,) = rows(engine, sse_run, sse_run.c.run_id == str(result.run_id))
        assert state["closed"] and state["last_seq"] == len(feed)
        _assert_ending(name, {e["event"]: e["data"] for e in feed}, kinds, result)


def _is_status(event: object) -> bool:
    return isinstance(event, Run.ApplicationStatusChanged)


def _assert_ending(
    name: str, data: dict[str, dict[str, Any]], kinds: list[str], result: ChatResult
) -> None:
    outcome = result.release_outcome
    if outcome is ReleaseOutcome.CANCELLED:  # never a public CANCELLED done
        assert kinds[-1] == "failure" and "done" not in kinds, (name, kinds)
    else:
        assert kinds[-1] == "done" and data["done"]["release_outcome"] == outcome.value, name
    if outcome in PUBLISHED:
        assert data["content"]["release_outcome"] == outcome.value
        assert data["content"]["content"] == plain(result.content), name
        return
    assert "content" not in data, (name, kinds)
    failure = data["failure"]
    assert failure["release_outcome"] == outcome.value
    assert failure["termination_state"] == result.termination.state.value
    assert failure["termination_reason"] == result.termination.reason.value


# -- 4. the trace timeline --------------------------------------------------------------------


def test_the_trace_has_one_row_per_log_entry_on_its_runs_timeline(
    store: HarnessStore, engine: Engine, fleet: dict[str, ChatResult]
) -> None:
    owners: dict[UUID, str] = {}
    expected = {
        position: (
            owner(store, owners, e.originator_id),
            str(e.originator_id),
            e.originator_version,
            event_type_name(type(e)),
        )
        for position, e, _ in notifications(store)
    }
    timeline = rows(engine, trace_event, order_by=[trace_event.c.position])
    found = {
        r["position"]: (r["run_id"], r["stream_id"], r["stream_version"], r["event_type"])
        for r in timeline
    }
    assert found == expected
    assert {r["run_id"] for r in timeline} == {str(result.run_id) for result in fleet.values()}
    assert set(PHASES) | {"AGENT_MODEL_STEP"} == {event_type_name(c) for c in EVENT_CLASSES}
    for row in timeline:
        assert row["phase"] == _expected_phase(row), row
        assert row["status"] in {s.value for s in TraceEventStatus}, row
        assert row["status"] == _expected_status(row, row["status"]), row
    success = str(fleet["conclusion_supported"].run_id)
    types = iter(r["event_type"] for r in timeline if r["run_id"] == success)
    assert all(any(t == wanted for t in types) for wanted in SUCCESS_TRACE)  # SPEC §13 order


def _expected_phase(row: dict[str, Any]) -> str:
    if row["event_type"] == "AGENT_MODEL_STEP":
        return STEP_PHASES[row["attributes"]["purpose"]]
    phase = PHASES[row["event_type"]]
    assert phase in {p.value for p in TracePhase}
    return phase


def _expected_status(row: dict[str, Any], otherwise: str) -> str:
    """The status SPEC §13 fixes for the events whose outcome it names; ``otherwise`` if none."""
    attributes = row["attributes"]
    match row["event_type"]:
        case "TOOL_REQUEST_REJECTED" | "PROGRESS_PROTOCOL_VIOLATION":
            return "REJECTED"
        case "TOOL_INVOCATION_READY":
            return "OK"
        case "TOOL_INVOCATION_FAILED":
            return "ERROR"
        case "RELEASE_DECISION":
            return "OK" if attributes["outcome"] == "SUCCESS" else "INFO"
        case "DRAFT_PROPOSED":
            return "OK" if attributes["outcome"] == "VALID" else "ERROR"
        case "PASSAGES_RETRIEVED":
            return "OK" if attributes["passages"] else "INFO"
        case "ANSWER_PROPOSED":
            return "OK" if attributes["refusal"] is None else "ERROR"
        case "RUN_TERMINATED":
            return "OK" if attributes["state"] == "SUCCESS" else "ERROR"
        case "RUN_FINISHED":
            return "OK" if attributes["release_outcome"] in ("SUCCESS", "FALLBACK") else "ERROR"
        case _:
            return otherwise


# -- 5. session turns -------------------------------------------------------------------------


def test_session_turns_count_from_one_and_carry_only_diagnosis_successes(
    store: HarnessStore, engine: Engine, fleet: dict[str, ChatResult]
) -> None:
    turns = rows(engine, session_turn, order_by=[session_turn.c.session_id, session_turn.c.turn])
    started = {str(e.originator_id): p for p, e, _ in notifications(store) if _is_start(e)}
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for turn in turns:
        by_session[turn["session_id"]].append(turn)
    assert {s: len(t) for s, t in by_session.items()} == Counter(
        r.session_id for r in fleet.values()
    )
    for session in by_session.values():
        assert [t["turn"] for t in session] == list(range(1, len(session) + 1))
        order = [started[t["run_id"]] for t in session]
        assert order == sorted(order)  # numbered in start order, not finish order
    interleaved = [str(fleet[f"interleaved/{name}"].run_id) for name in INTERLEAVED]
    assert [t["run_id"] for t in by_session["session-x"]] == interleaved
    for turn in turns:
        _assert_turn_carries(store, turn)
    assert [t for t in turns if t["release_outcome"] == "FALLBACK"]


def _is_start(event: object) -> bool:
    return isinstance(event, Run.RunStarted)


def _assert_turn_carries(store: HarnessStore, turn: dict[str, Any]) -> None:
    run = store.get_run(UUID(turn["run_id"]))
    assert turn["release_outcome"] == value(run.finished_outcome)
    assert turn["intent"] == value(run.intent)
    if run.intent is Intent.DIAGNOSIS and run.finished_outcome is ReleaseOutcome.SUCCESS:
        assert turn["published_result"] == plain(run.published)
        assert run.previous_turn == turn["published_result"]["conclusion"]
    else:  # fallbacks, failures and cancels never become PreviousTurn
        assert turn["published_result"] is None and run.previous_turn is None


# -- 6. exactly-once under two runners --------------------------------------------------------


def test_two_projectors_stepping_in_turn_apply_every_entry_once(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    for name in ("conclusion_supported", "saturated", "client_disconnected"):
        run_scenario(services, name)
    first, second = Projector(store, engine, batch_size=7), Projector(store, engine, batch_size=7)
    while first.step() + second.step():
        pass
    run_scenario(services, "budget_safe_progress")
    assert second.catch_up() > 0 and first.step() == 0

    head = store.head()
    assert first.positions() == dict.fromkeys(first.names, head)
    assert count(engine, trace_event) == len(notifications(store))
    for row in rows(engine, diagnosis_run):
        usage = store.get_run(UUID(row["run_id"])).usage
        assert (row["model_calls"], row["tool_calls"]) == (usage.model_calls, usage.tool_calls)
    followed = dump(engine)
    Projector(store, engine).rebuild()
    assert dump(engine) == followed


@pytest.mark.parametrize("stale_from", ["log_start", "mid_log"])
def test_a_stale_batch_is_refused_as_a_conflict_and_changes_nothing(
    services: Services, store: HarnessStore, engine: Engine, stale_from: str
) -> None:
    """The loser read its positions, the winner applied the same batch first (runner docstring)."""
    run_scenario(services, "conclusion_supported")
    loser, winner = Projector(store, engine, batch_size=7), Projector(store, engine, batch_size=7)
    if stale_from == "mid_log":
        winner.step()  # the race is over entries after RUN_STARTED: no new rows in it
    positions = loser.positions()
    stale: list[Positioned] = [
        item for item in notifications(store) if item[0] > min(positions.values())
    ][:7]
    assert winner.step() == len(stale)
    before = dump(engine)

    refused: Exception | None = None
    try:
        loser._apply(positions, stale)
    except Exception as error:  # the type is the point of this test
        refused = error
    assert dump(engine) == before
    assert isinstance(refused, TrackingConflict), (
        f"a stale batch from {stale_from} must be refused as a TrackingConflict (so that step() "
        f"counts it and carries on from the winner's position), but _apply raised {refused!r}"
    )


def test_the_runner_that_loses_a_race_counts_a_conflict_and_carries_on(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_scenario(services, "conclusion_supported")
    winner = Projector(store, engine, batch_size=7)
    loser = LosesTheRace(store, engine, winner, batch_size=7)
    winner.step()  # both past RUN_STARTED: the raced batch only updates rows

    assert loser.step() == 7
    assert (loser.conflicts, winner.conflicts) == (1, 0)
    second_batch_end = notifications(store)[13][0]
    assert loser.positions() == dict.fromkeys(loser.names, second_batch_end)  # applied once
    while loser.step() + winner.step():
        pass
    assert count(engine, trace_event) == len(notifications(store))
    followed = dump(engine)
    Projector(store, engine).rebuild()
    assert dump(engine) == followed


# -- 7. read-your-writes ----------------------------------------------------------------------


def test_a_reader_waits_for_its_own_write_to_be_projected(
    settings: Settings, services: Services, store: HarnessStore, engine: Engine
) -> None:
    services = bootstrap(settings, overrides=Overrides(store=store))
    live = services.live_projections().start()
    reader = Projector(store, engine)  # not following: it polls the tracking rows
    try:
        result = run_scenario(services, "conclusion_supported")
        assert result.position == store.head()

        assert reader.wait_for(result.position, timeout=30)
        db = run_row(engine, result.run_id)
        assert (db["status"], db["release_outcome"]) == ("SUCCESS", "SUCCESS")
        feed = rows(engine, sse_event, sse_event.c.run_id == str(result.run_id))
        assert "done" in {entry["event"] for entry in feed}
        assert live.projector.wait_for(result.position, timeout=30)
        assert not reader.wait_for(store.head() + 1000, timeout=0.2)  # a bound, not a timing
    finally:
        live.close()
        services.close()


# -- 8. run_daily -----------------------------------------------------------------------------


def test_run_daily_counts_the_finished_runs_of_each_group(
    engine: Engine, fleet: dict[str, ChatResult]
) -> None:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for run in rows(engine, diagnosis_run):
        if run["finished_at"] is not None:
            groups[_group(run, utc_day(run["created_at"]))].append(run)
    daily = rows(engine, run_daily)

    assert {_group(d, d["day"]): d["runs"] for d in daily} == {
        key: len(runs) for key, runs in groups.items()
    }
    assert sum(d["runs"] for d in daily) == len(fleet)
    for day in daily:
        runs = groups[_group(day, day["day"])]
        durations = sorted(r["duration_ms"] for r in runs)
        rank = {p: durations[max(1, math.ceil(p / 100 * len(runs))) - 1] for p in (50, 95)}
        assert (day["duration_p50_ms"], day["duration_p95_ms"]) == (rank[50], rank[95])
        assert day["tokens_in"] == sum(r["tokens_in"] for r in runs)
        assert day["tokens_out"] == sum(r["tokens_out"] for r in runs)


def _group(row: dict[str, Any], day: str) -> tuple[str, ...]:
    columns = ("intent", "release_outcome", "fallback_type", "termination_state")
    return (day, *(row[c] or "" for c in columns))


def test_run_daily_groups_by_utc_day_whatever_the_servers_time_zone(
    settings: Settings, services: Services, store: HarnessStore
) -> None:
    """A PostgreSQL server's default TimeZone is the host's (initdb), often not UTC.

    The zone is chosen so that local and UTC dates differ now (POSIX signs: Etc/GMT-14 is
    UTC+14). The run starts and finishes in different batches, as it does when following live.
    SQLite has no session time zone: there it is the control.
    """
    with bootstrap(settings, overrides=Overrides(store=store)) as zoned:  # an engine of its own
        engine = zoned.engine
        if settings.database.kind == "postgres":
            zone = "Etc/GMT-14" if datetime.now(UTC).hour >= 11 else "Etc/GMT+12"
            event.listen(engine, "connect", session_time_zone(zone))
        run_scenario(services, "conclusion_supported")
        Projector(store, engine, batch_size=7).catch_up()
        (run,) = rows(engine, diagnosis_run)
        daily = [(d["day"], d["runs"]) for d in rows(engine, run_daily)]
        assert daily == [(utc_day(run["created_at"]), 1)], (
            f"run_daily {daily}: the finished run created {run['created_at']} is not counted "
            "on its UTC day"
        )
