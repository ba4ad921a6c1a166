"""Audit checkpoints: a run's tail deleted from the events table is named by ``audit verify``.

The chain links alone cannot show a cut tail (the events left still link up); the checkpoints
the log keeps of every stream's head can, on SQLite and PostgreSQL, with an audit key.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

from pydantic import SecretStr
from sqlalchemy import text

from application.audit.checkpoints import Checkpointer, record_checkpoint
from application.store import HarnessStore, events_of
from bootstrap.composition import Services, bootstrap
from domain.checkpoint import CHECKPOINTS_ID, AuditCheckpoint
from domain.states import CancellationReason
from infrastructure.settings import Settings
from tests.helpers import scripted
from tests.integration._audit_helpers import clean_exit, env_of, harness_cli, violations
from tests.integration._projection_helpers import QUERY, run_scenario

KEY = "an audit key the database's writers do not hold"


def cut_tail(settings: Settings, stream: UUID, keep: int) -> int:
    """Delete every event of ``stream`` after version ``keep``, as someone with SQL access can."""
    sqlite = settings.database.kind == "sqlite"
    table, key = ("stored_events", stream.hex) if sqlite else ("harness_events", str(stream))
    with bootstrap(settings) as services, services.engine.begin() as connection:
        deleted = connection.execute(
            text(
                f"DELETE FROM {table} WHERE originator_id = :stream AND originator_version > :keep"
            ),
            {"stream": key, "keep": keep},
        )
    return deleted.rowcount


def verified(env: dict[str, str], *source: str) -> tuple[int, list[str], str]:
    """``harness audit verify``: exit code, violations other than the read tables', summary."""
    result = harness_cli(env, "audit", "verify", *source)
    assert clean_exit(result), result.exception
    found = [f"[{v.rule}] {v.text}" for v in violations(result) if v.rule != "projection"]
    return result.exit_code, found, result.stdout.splitlines()[-1]


def test_a_run_whose_last_events_were_deleted_is_named(settings: Settings, tmp_path: Path) -> None:
    keyed = settings.model_copy(update={"audit_key": SecretStr(KEY)})
    env = env_of(keyed, KEY)
    with bootstrap(keyed, create=True) as services:
        cut = run_scenario(services, "conclusion_supported", "session-1").run_id
        kept_run = run_scenario(services, "missing_context", "session-2").run_id
        version = len(events_of(services.store, cut))
    recorded = harness_cli(env, "audit", "checkpoint")
    assert recorded.exit_code == 0, recorded.output
    assert "recorded 1 checkpoint of " in recorded.stdout
    assert harness_cli(env, "audit", "checkpoint").stdout.startswith("nothing new since")
    with bootstrap(keyed) as services:
        run_scenario(services, "limited_checks", "session-3")  # appended after the checkpoint

    assert cut_tail(keyed, cut, version - 2) == 2  # RUN_TERMINATED and RUN_FINISHED
    assert harness_cli(env, "projections", "rebuild").exit_code == 0

    expected = (
        f"[checkpoint] CHECKPOINT_RECORDED at position"
        f" {_checkpoint_position(keyed)} (stream {CHECKPOINTS_ID} v2): stream {cut}:"
        f" version {version}, its head at this checkpoint, is not in the log (its last version"
        f" is {version - 2}): its tail was cut, events deleted"
    )
    code, found, summary = verified(env, "--db")
    assert (code, found) == (1, [expected])
    assert "(2 finished, 1 still running)" in summary  # the cut run lost its termination too
    export = tmp_path / "audit.jsonl"
    assert harness_cli(env, "audit", "export", "--all", "--out", str(export)).exit_code == 0
    code, found, _ = verified(env, str(export))
    assert (code, found) == (1, [expected])
    assert str(kept_run) not in expected


def _checkpoint_position(settings: Settings) -> int:
    with bootstrap(settings) as services:
        notifications = services.store.notifications(0, 10_000)
    (recorded,) = [n for n in notifications if n.originator_id == CHECKPOINTS_ID][1:]
    return recorded.id


def test_a_finished_run_records_a_checkpoint_once_enough_events_came(
    services: Services, store: HarnessStore
) -> None:
    store.after_save[:] = [Checkpointer(every=20).after_save]  # due sooner than by default
    first = run_scenario(services, "conclusion_supported", "session-1")
    (started, recorded) = events_of(store, CHECKPOINTS_ID)
    assert isinstance(started, AuditCheckpoint.CheckpointsStarted)
    assert isinstance(recorded, AuditCheckpoint.CheckpointRecorded)
    head = len(events_of(store, first.run_id))
    assert recorded.versions[str(first.run_id)] == head
    assert recorded.upto == store.head() - 2  # the checkpoint's own two events came after

    with scripted(services, "missing_context") as made:  # fewer than 20 events: not due yet
        made.service.ask("session-2", QUERY)
    assert len(events_of(store, CHECKPOINTS_ID)) == 2
    assert record_checkpoint(store) is not None  # on demand, it covers the rest
    assert record_checkpoint(store) is None
    assert events_of(store, CHECKPOINTS_ID)[-1].upto == store.head() - 1


def test_a_run_terminated_without_run_finished_is_not_counted_finished(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    with bootstrap(sqlite_settings, create=True) as services:
        run_scenario(services, "conclusion_supported", "session-1")
        with scripted(services, "conclusion_supported") as made:
            started = made.service.begin("session-2", QUERY)[0].id
        store = services.store
        store.cancel(started, CancellationReason.USER_REQUESTED)  # its worker never finishes it
        store.start_run("session-3", QUERY, datetime.now(UTC) + timedelta(minutes=5))
    env, export = env_of(sqlite_settings), tmp_path / "audit.jsonl"
    assert harness_cli(env, "audit", "export", "--all", "--out", str(export)).exit_code == 0
    code, found, summary = verified(env, str(export))
    assert (code, found) == (0, [])
    assert "3 runs (1 finished, 1 still running, 1 ended without RUN_FINISHED)" in summary
