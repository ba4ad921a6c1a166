"""``harness projections``: results on stdout, notes on stderr; a status read creates nothing."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect

from bootstrap.composition import bootstrap
from infrastructure.eventstore import init_store
from infrastructure.settings import Settings
from tests.integration._cli import harness, store_env


def test_status_without_read_tables_says_so_and_creates_none(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    init_store(sqlite_settings).close()  # the log without the read side
    status = harness("projections", "status", env=store_env(sqlite_settings), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "diagnosis_run" in status.stdout and "lag" in status.stdout
    assert "harness db init" in status.stderr
    assert sqlite_settings.database.describe() in status.stderr
    with bootstrap(sqlite_settings) as services:
        assert "projection_tracking" not in inspect(services.engine).get_table_names()


def test_rebuild_and_status_print_results_on_stdout(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    env = store_env(sqlite_settings)
    assert harness("ask", "hello", env=env, cwd=tmp_path).returncode == 0
    rebuilt = harness("projections", "rebuild", env=env, cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "rebuilt diagnosis_run" in rebuilt.stdout and "rebuilt" not in rebuilt.stderr
    status = harness("projections", "status", env=env, cwd=tmp_path)
    assert "diagnosis_run" in status.stdout and status.stderr == ""
