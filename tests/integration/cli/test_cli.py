"""The ``harness`` command as a user runs it: a real process, real files, real PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from uuid import uuid4

import psycopg

from infrastructure.settings import Settings
from tests.conftest import PG_URL

HARNESS = [sys.executable, "-c", "from cli.main import app; app()"]


def _harness(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    root = str(Path(__file__).resolve().parents[3])
    clean["PYTHONPATH"] = root + os.pathsep + clean.get("PYTHONPATH", "")
    return subprocess.run(
        [*HARNESS, *args], env=clean | env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_db_init_then_status_on_the_default_sqlite_file(tmp_path: Path) -> None:
    init = _harness("db", "init", env={}, cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert "log head at 0" in init.stdout  # its result; diagnostics go to stderr
    assert (tmp_path / "harness.db").exists()
    status = _harness("db", "status", env={}, cwd=tmp_path)
    assert status.returncode == 0 and "log head at 0" in status.stdout


def test_status_before_init_tells_the_user_what_to_do(
    pg_settings: Settings, tmp_path: Path
) -> None:
    env = {
        "HARNESS_DATABASE_URL": pg_settings.database_url,
        "HARNESS_DATABASE_SCHEMA": pg_settings.database_schema,
    }
    before = _harness("db", "status", env=env, cwd=tmp_path)
    assert before.returncode == 2
    assert "run `harness db init`" in before.stderr and "Traceback" not in before.stderr
    assert _harness("db", "init", env=env, cwd=tmp_path).returncode == 0
    assert _harness("db", "init", env=env, cwd=tmp_path).returncode == 0  # idempotent
    assert "log head at 0" in _harness("db", "status", env=env, cwd=tmp_path).stdout
    with psycopg.connect(PG_URL) as connection:  # workers will find their lease table made
        found = connection.execute(
            "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'worker_lease'",
            (pg_settings.database_schema,),
        ).fetchone()
    assert found is not None


def test_bad_configuration_is_named_without_a_traceback(tmp_path: Path) -> None:
    result = _harness("db", "init", env={"HARNESS_DATABASE_URL": "mysql://x/y"}, cwd=tmp_path)
    assert result.returncode == 2
    assert "HARNESS_DATABASE_URL" in result.stderr and "mysql" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_database_is_reported_without_the_password(tmp_path: Path) -> None:
    url = "postgresql://postgres:sekret-pw@127.0.0.1:1/harness"
    result = _harness("db", "init", env={"HARNESS_DATABASE_URL": url}, cwd=tmp_path)
    assert result.returncode == 2
    assert "127.0.0.1:1" in result.stderr
    assert "sekret-pw" not in result.stderr and "Traceback" not in result.stderr


def test_serve_refuses_a_public_address_without_api_keys(tmp_path: Path) -> None:
    refused = _harness("serve", "--host", "0.0.0.0", env={}, cwd=tmp_path)
    assert refused.returncode == 2
    assert "without API keys" in refused.stderr and "HARNESS_API_KEYS" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "harness.db").exists()  # refused before anything was set up


def test_serve_refuses_several_workers_on_sqlite(tmp_path: Path) -> None:
    refused = _harness("serve", "--workers", "2", env={}, cwd=tmp_path)
    assert refused.returncode == 2 and "need PostgreSQL" in refused.stderr


def test_runs_list_show_explain_and_cancel(tmp_path: Path) -> None:
    asked = _harness("ask", "hello", "--session", "ops-7", env={}, cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr

    listed = _harness("runs", "list", "--json", "--session", "ops-7", env={}, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (run,) = json.loads(listed.stdout)["data"]
    assert (run["status"], run["intent"], run["termination_reason"]) == (
        "SUCCESS",
        "SYSTEM_CHAT",
        "COMPLETED",
    )
    shown = json.loads(
        _harness("runs", "show", run["run_id"], "--json", env={}, cwd=tmp_path).stdout
    )
    assert shown["run"]["run_id"] == run["run_id"]
    assert [e["event_type"] for e in shown["trace"]][-1] == "RUN_FINISHED"
    explained = _harness("runs", "explain", run["run_id"], "--json", env={}, cwd=tmp_path)
    questions = [a["question"] for a in json.loads(explained.stdout)["answers"]]
    assert "timed_out_or_budget_exhausted" in questions
    cancelled = _harness("runs", "cancel", run["run_id"], env={}, cwd=tmp_path)
    assert cancelled.returncode == 0 and "already ended SUCCESS" in cancelled.stdout
    unknown = _harness("runs", "show", "not-an-id", env={}, cwd=tmp_path)
    assert unknown.returncode == 2 and "not a run id" in unknown.stderr
    missing = _harness("runs", "explain", str(uuid4()), env={}, cwd=tmp_path)
    assert missing.returncode == 2 and "no run" in missing.stderr
