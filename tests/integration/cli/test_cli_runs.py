"""``harness runs``: current reads, ids a user can paste, checked filters, clean streams."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest
import typer

from bootstrap.composition import bootstrap
from cli.reads import lookup_run_id
from infrastructure.eventstore import init_store
from infrastructure.settings import Settings
from tests.integration._cli import harness, store_env

LONG_QUERY = "why did checkout get slow right after the deploy of the new payment client " * 2
TWINS = [UUID("abcd1234-0000-4000-8000-000000000001"), UUID("abcd1234-1111-4000-8000-000000000002")]


def _start_runs(settings: Settings, *run_ids: UUID) -> None:
    """RUNNING runs with chosen ids, appended to the log by this process (no projector runs)."""
    with bootstrap(settings) as services:  # `harness db init` made the store
        deadline = datetime.now(UTC) + timedelta(hours=1)
        for run_id in run_ids:
            services.store.start_run("twins", LONG_QUERY, deadline, run_id=run_id)


@pytest.fixture
def sqlite_env(sqlite_settings: Settings, tmp_path: Path) -> dict[str, str]:
    env = store_env(sqlite_settings)
    assert harness("db", "init", env=env, cwd=tmp_path).returncode == 0
    return env


def test_runs_read_what_ask_just_wrote(settings: Settings, tmp_path: Path) -> None:
    env = store_env(settings)
    assert harness("db", "init", "--sample", env=env, cwd=tmp_path).returncode == 0
    asked = harness("ask", "hello", "--session", "ops-7", env=env, cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr

    listed = harness("runs", "list", "--json", "--session", "ops-7", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (run,) = json.loads(listed.stdout)["data"]
    assert (run["query"], run["termination_reason"]) == ("hello", "COMPLETED")
    for intent, count in (("system_chat", 1), ("DIAGNOSIS", 0)):
        chosen = harness("runs", "list", "--json", "--intent", intent, env=env, cwd=tmp_path)
        assert chosen.returncode == 0, chosen.stderr
        assert json.loads(chosen.stdout)["count"] == count, intent
    shown = harness("runs", "show", run["run_id"][:8], "--json", env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["trace"][-1]["event_type"] == "RUN_FINISHED"


def test_a_lock_held_elsewhere_is_named_and_the_tables_are_shown_as_they_are(
    sqlite_settings: Settings, sqlite_env: dict[str, str], tmp_path: Path
) -> None:
    _start_runs(sqlite_settings, TWINS[0])
    holder = sqlite3.connect(sqlite_settings.database.path)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process writing, for longer than the timeout
        env = sqlite_env | {"HARNESS_DB_LOCK_TIMEOUT": "1"}
        listed = harness("runs", "list", "--json", env=env, cwd=tmp_path)
        shown = harness("runs", "show", str(TWINS[0]), env=env, cwd=tmp_path)
    finally:
        holder.rollback()
        holder.close()
    assert listed.returncode == 0, listed.stderr
    assert "another process holds the lock" in listed.stderr
    assert sqlite_settings.database.describe() in listed.stderr
    assert json.loads(listed.stdout)["data"] == []
    assert shown.returncode == 2
    assert "entries behind the log" in shown.stderr and "another process holds" in shown.stderr


def test_missing_read_tables_say_to_run_db_init_and_name_the_store(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    init_store(sqlite_settings).close()  # the log without the read side
    listed = harness("runs", "list", env=store_env(sqlite_settings), cwd=tmp_path)
    assert listed.returncode == 2
    assert "harness db init" in listed.stderr and "diagnosis_run" in listed.stderr
    assert sqlite_settings.database.describe() in listed.stderr
    assert "Traceback" not in listed.stderr


def test_every_run_command_takes_a_unique_prefix(
    sqlite_settings: Settings, sqlite_env: dict[str, str], tmp_path: Path
) -> None:
    _start_runs(sqlite_settings, *TWINS)
    env, first = sqlite_env, str(TWINS[0])
    shown = harness("runs", "show", first[:20], "--json", env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["run"]["run_id"] == first
    explained = harness("runs", "explain", first[:20], "--json", env=env, cwd=tmp_path)
    assert explained.returncode == 0 and json.loads(explained.stdout)["query"] == LONG_QUERY
    cancelled = harness("runs", "cancel", first.upper()[:20], env=env, cwd=tmp_path)
    assert cancelled.returncode == 0 and f"run {first} cancelled" in cancelled.stdout

    for command in ("show", "explain", "cancel"):
        ambiguous = harness("runs", command, "abcd1234", env=env, cwd=tmp_path)
        assert ambiguous.returncode == 2, command
        assert "ambiguous" in ambiguous.stderr
        assert all(str(twin) in ambiguous.stderr for twin in TWINS)
    unknown = harness("runs", "show", "ffff00", env=env, cwd=tmp_path)
    assert unknown.returncode == 2
    assert "no run id starts with 'ffff00'" in unknown.stderr
    assert sqlite_settings.database.describe() in unknown.stderr
    for bad in ("abc", "not-an-id"):
        refused = harness("runs", "explain", bad, env=env, cwd=tmp_path)
        assert refused.returncode == 2 and "is not a run id" in refused.stderr


def test_piped_lists_keep_whole_ids_and_queries(sqlite_env: dict[str, str], tmp_path: Path) -> None:
    asked = harness("ask", LONG_QUERY, env=sqlite_env, cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    listed = harness("runs", "list", env=sqlite_env, cwd=tmp_path)
    (run,) = json.loads(harness("runs", "list", "--json", env=sqlite_env, cwd=tmp_path).stdout)[
        "data"
    ]
    assert run["run_id"] in listed.stdout
    assert LONG_QUERY.strip() in listed.stdout and "…" not in listed.stdout


def test_a_terminal_gets_short_ids_unique_among_all_runs(
    sqlite_settings: Settings, sqlite_env: dict[str, str], tmp_path: Path
) -> None:
    _start_runs(sqlite_settings, *TWINS, UUID("12345678-9abc-4def-8000-000000000000"))
    leader, follower = pty.openpty()
    env = sqlite_env | {"COLUMNS": "160"}
    chunks: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(leader, chunks))
    reader.start()  # read while it writes: a full terminal buffer would block the command
    try:
        listed = harness(
            "runs", "list", env=env, cwd=tmp_path, stdout=follower, stderr=subprocess.PIPE
        )
    finally:
        os.close(follower)
        reader.join(timeout=60)
        os.close(leader)
    shown = b"".join(chunks).decode()
    assert listed.returncode == 0, listed.stderr
    assert "12345678 " in shown and "12345678-9abc" not in shown  # short where unique
    assert "abcd1234-0 " in shown and "abcd1234-1 " in shown  # longer where 8 digits collide
    assert "…" in shown  # the long query is cut to fit


def _read_all(fd: int, chunks: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # every writer has closed the terminal
            return
        if not chunk:
            return
        chunks.append(chunk)


def test_filters_are_checked_against_the_states(sqlite_env: dict[str, str], tmp_path: Path) -> None:
    typo = harness("runs", "list", "--state", "timedout", env=sqlite_env, cwd=tmp_path)
    assert typo.returncode == 2
    assert "'timedout'" in typo.stderr and "TIMED_OUT" in typo.stderr
    assert "Traceback" not in typo.stderr and typo.stdout == ""
    outcome = harness("runs", "list", "--outcome", "fallbak", env=sqlite_env, cwd=tmp_path)
    assert outcome.returncode == 2 and "FALLBACK" in outcome.stderr
    intent = harness("runs", "list", "--intent", "diagnose", env=sqlite_env, cwd=tmp_path)
    assert intent.returncode == 2 and "'diagnose'" in intent.stderr and "DIAGNOSIS" in intent.stderr
    fine = harness("runs", "list", "--state", "timed_out", "--json", env=sqlite_env, cwd=tmp_path)
    assert fine.returncode == 0 and json.loads(fine.stdout)["count"] == 0


def test_running_runs_are_listed_by_state_running(
    sqlite_settings: Settings, sqlite_env: dict[str, str], tmp_path: Path
) -> None:
    _start_runs(sqlite_settings, TWINS[0])
    listed = harness("runs", "list", "--state", "running", "--json", env=sqlite_env, cwd=tmp_path)
    assert [r["run_id"] for r in json.loads(listed.stdout)["data"]] == [str(TWINS[0])]


def test_results_on_stdout_and_diagnostics_on_stderr(
    sqlite_settings: Settings, sqlite_env: dict[str, str], tmp_path: Path
) -> None:
    _start_runs(sqlite_settings, TWINS[0])
    # a run younger than one lease TTL is never the recovery's, however slow the machine is
    env, run_id = sqlite_env | {"HARNESS_WORKER_LEASE_TTL": "3600"}, str(TWINS[0])

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = harness("runs", *args, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done

    for listed in (run("list"), run("list", "--json")):
        assert run_id in listed.stdout and "run(s)" not in listed.stdout
        assert listed.stderr.strip() == "1 of 1 run(s)"
    for args in (("show", run_id), ("show", run_id, "--json"), ("explain", run_id)):
        shown = run(*args)
        assert LONG_QUERY.strip() in shown.stdout and shown.stderr == "", args
    cancelled = run("cancel", run_id)
    assert f"run {run_id} cancelled at log position" in cancelled.stdout
    assert cancelled.stderr == ""
    again = run("cancel", run_id)
    assert "already ended CANCELLED" in again.stdout and again.stderr == ""
    recovered = run("recover", "--json")
    assert json.loads(recovered.stdout)["ended"] == [] and "ended 0 run(s)" in recovered.stderr


def test_lookup_run_id_serves_commands_that_hold_only_a_store(
    sqlite_settings: Settings, sqlite_env: dict[str, str]
) -> None:
    _start_runs(sqlite_settings, *TWINS)
    with bootstrap(sqlite_settings) as services:
        assert lookup_run_id(services, str(TWINS[1])[:10]) == TWINS[1]
        with pytest.raises(typer.Exit) as ambiguous:
            lookup_run_id(services, "abcd")
    assert ambiguous.value.exit_code == 2
