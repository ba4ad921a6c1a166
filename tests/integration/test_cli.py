"""The ``harness`` command as a user runs it: a real process, real files, real PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from infrastructure.settings import Settings

HARNESS = [sys.executable, "-c", "from api.cli import app; app()"]


def _harness(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    root = str(Path(__file__).resolve().parents[2])
    clean["PYTHONPATH"] = root + os.pathsep + clean.get("PYTHONPATH", "")
    return subprocess.run(
        [*HARNESS, *args], env=clean | env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_db_init_then_status_on_the_default_sqlite_file(tmp_path: Path) -> None:
    init = _harness("db", "init", env={}, cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert "log head at 0" in init.stderr
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
