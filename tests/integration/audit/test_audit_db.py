"""``harness audit verify --db`` on SQLite and PostgreSQL: the log, and the read tables against it.

One realistic log per backend (built once); a test that edits a stored event or a read-table row
puts it back afterwards. Invariant violations are appended as raw events to a store of their own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from typer.testing import Result

from application.audit.records import store_records
from bootstrap.composition import bootstrap
from domain.run import Run
from domain.states import FailureCode, RunState
from domain.tool_invocation import ToolInvocation
from domain.tool_states import EvidenceStatus
from infrastructure.read_tables import diagnosis_run
from infrastructure.settings import Settings
from tests.conftest import pg_schema
from tests.integration._audit_helpers import (
    build_log,
    clean_exit,
    env_of,
    harness_cli,
    load,
    named,
    violations,
)
from tests.integration._projection_helpers import rows, run_scenario


@dataclass(frozen=True)
class Database:
    settings: Settings
    env: dict[str, str]
    engine: Engine
    head: int
    events: int


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("audit-db") / "harness.db"
        yield from _built(Settings(database_url=f"sqlite:///{path}"))
        return
    request.getfixturevalue("pg_available")
    with pg_schema() as settings:
        yield from _built(settings)


def _built(settings: Settings) -> Iterator[Database]:
    with bootstrap(settings, create=True) as services:
        build_log(services)
        store = services.store
        head, events = store.head(), len(list(store_records(store)))  # PostgreSQL ids have holes
    with bootstrap(settings) as services:
        yield Database(settings, env_of(settings), services.engine, head, events)


def verify_db(database: Database) -> tuple[int, list[str]]:
    result = harness_cli(database.env, "audit", "verify", "--db")
    assert clean_exit(result), result.exception
    return result.exit_code, [line for line in result.stdout.splitlines() if line.startswith("[")]


def test_a_clean_database_verifies(database: Database) -> None:
    result = harness_cli(database.env, "audit", "verify", "--db")
    assert result.exit_code == 0, result.stdout
    assert "read tables agree with the log" in result.stdout
    assert f"{database.events} events" in result.stdout and "no violations" in result.stdout


def test_an_edited_read_table_row_is_named(database: Database) -> None:
    (row,) = rows(database.engine, diagnosis_run, diagnosis_run.c.termination_state == "TIMED_OUT")
    run_id = row["run_id"]
    statement = text("UPDATE diagnosis_run SET release_outcome = :outcome WHERE run_id = :run_id")
    with database.engine.begin() as connection:
        connection.execute(statement, {"outcome": "SUCCESS", "run_id": run_id})
    try:
        code, found = verify_db(database)
    finally:
        with database.engine.begin() as connection:
            connection.execute(statement, {"outcome": row["release_outcome"], "run_id": run_id})
    assert code == 1
    assert found == [
        f"[projection] diagnosis_run [run_id={run_id}]: column release_outcome: live 'SUCCESS',"
        " log 'FAILED'"
    ]


def test_projections_behind_or_ahead_of_the_log_are_named(database: Database) -> None:
    move = text("UPDATE projection_tracking SET position = position + :by WHERE name = :name")
    with database.engine.begin() as connection:
        connection.execute(move, {"by": -3, "name": "trace_event"})
        connection.execute(move, {"by": 5, "name": "session_turn"})
    try:
        code, found = verify_db(database)
    finally:
        with database.engine.begin() as connection:
            connection.execute(move, {"by": 3, "name": "trace_event"})
            connection.execute(move, {"by": -5, "name": "session_turn"})
    head = database.head
    assert code == 1
    assert found == [
        f"[projection] projection_tracking [name=trace_event]: position {head - 3} is behind the"
        f" log head {head} by 3",
        f"[projection] projection_tracking [name=session_turn]: position {head + 5} is ahead of"
        f" the log head {head}: events the log lacks",
    ]


def test_an_event_edited_in_the_events_table_is_named(database: Database) -> None:
    sqlite = database.settings.database.kind == "sqlite"
    position_column, table = (
        ("rowid", "stored_events") if sqlite else ("notification_id", "harness_events")
    )
    with database.engine.connect() as connection:
        position, state = connection.execute(
            text(
                f"SELECT {position_column}, state FROM {table}"
                " WHERE topic = 'domain.run:Run.RoutingDecision'"
                f" ORDER BY {position_column} LIMIT 1 OFFSET 2"
            )
        ).one()
    edited = json.loads(bytes(state))
    edited["error"] = "rewritten in the database"
    update = text(f"UPDATE {table} SET state = :state WHERE {position_column} = :position")
    with database.engine.begin() as connection:
        new = json.dumps(edited, separators=(",", ":")).encode()
        connection.execute(update, {"state": new, "position": position})
    try:
        result = harness_cli(database.env, "audit", "verify", "--db")
    finally:
        with database.engine.begin() as connection:
            connection.execute(update, {"state": bytes(state), "position": position})
    assert result.exit_code == 1
    found = [f for f in violations(result) if f.rule != "projection"]
    # the broken chain, and the reason rewritten as words where the harness records a code
    assert [f.rule for f in found] == ["chain", "design §10.1"], found
    assert found[0].text.startswith(f"ROUTING_DECISION at position {position} (stream ")
    assert "its chain link does not match its content" in found[0].text
    assert "unusable as free text (25 characters)" in found[1].text


def test_invariants_broken_by_raw_events_are_named(settings: Settings, tmp_path: Path) -> None:
    """Events appended past the aggregates' checks: the chain is intact, the invariants are not."""
    with bootstrap(settings, create=True) as services:
        store = services.store
        finished = run_scenario(services, "conclusion_supported")
        run = store.get_run(finished.run_id)
        # the aggregates' own event machinery, without the commands' checks in front of it
        run.trigger_event(
            Run.RunTerminated, state=RunState.FAILED, reason=FailureCode.INTERNAL_ERROR, cause=""
        )
        at_second = store.save_all(run)
        started, _ = store.start_run("s-2", "why?", datetime.now(UTC) + timedelta(minutes=5))
        invocation = ToolInvocation.begin(started, "search_logs", "checkout", {})
        invocation.trigger_event(
            ToolInvocation.ToolInvocationReady,
            evidence_status=EvidenceStatus.ERROR,  # READY without a READY evidence status
            content="",
            byte_size=0,
            content_hash=hashlib.sha256(b"").hexdigest(),
            notes=(),
            redactions=0,
        )
        at_forged = store.save_all(invocation)
    env = env_of(settings)
    export = tmp_path / "raw.jsonl"
    assert harness_cli(env, "audit", "export", "--all", "--out", str(export)).exit_code == 0
    records = {r["position"]: r for r in load(export)}
    for source in ([str(export)], ["--db"]):
        result = harness_cli(env, "audit", "verify", *source)
        assert result.exit_code == 1, result.stdout
        assert {f.rule for f in violations(result)} >= {"SPEC §16.1", "SPEC §16.4"}
        (twice,) = named(result, records[at_second], "SPEC §16.1")
        assert "a second termination" in twice.text
        assert named(result, records[at_second], "SPEC §4")  # after RUN_FINISHED, too
        (bare,) = named(result, records[at_forged], "SPEC §16.4")
        assert "is READY with evidence status ERROR" in bare.text
        assert not [f for f in violations(result) if f.rule in ("chain", "order")]


def _projection_lines(result: Result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith("[projection]")]


def test_a_checkpoint_recorded_with_no_service_running_is_no_projection_lag(
    settings: Settings,
) -> None:
    """`harness audit checkpoint` appends events no projection reads, and nothing moves the
    positions past them when no service runs: that is no lag. A run nobody projected still is."""
    with bootstrap(settings, create=True) as services:
        run_scenario(services, "conclusion_supported")
        services.projector().catch_up()
        caught_up = services.store.head()
    env = env_of(settings)
    recorded = harness_cli(env, "audit", "checkpoint")
    assert recorded.exit_code == 0 and "recorded 1 checkpoint" in recorded.stdout, recorded.stdout
    with bootstrap(settings) as services:  # behind the head, by the checkpoint alone
        assert all(p.position == caught_up < p.head for p in services.projector().status())

    verified = harness_cli(env, "audit", "verify", "--db")
    assert verified.exit_code == 0, verified.stdout
    assert f"audit checkpoints (up to log position {caught_up})" in verified.stdout
    assert "no violations" in verified.stdout and _projection_lines(verified) == []

    with bootstrap(settings) as services:  # a run the projections never saw: that is lag
        run_scenario(services, "conclusion_supported", session_id="session-2")
    behind = harness_cli(env, "audit", "verify", "--db")
    assert behind.exit_code == 1
    lagging = [line for line in _projection_lines(behind) if "projection_tracking" in line]
    assert len(lagging) == 6, lagging  # every projection but eval_run, which saw no run
    assert all(f"position {caught_up} is behind the log head" in line for line in lagging)
