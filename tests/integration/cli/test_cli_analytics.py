"""``harness analytics export``: one file per view on stdout's word; bad input is one line, exit 2.

The export runs as a user runs it, in a process of its own on a real store (both stores for
the export itself), after runs asked through ``harness ask``; the attacks are kept as tests.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from infrastructure.analytics_export import arrow_schema
from infrastructure.analytics_schema import VIEWS
from tests.integration._cli import ROOT, harness, store_env

if TYPE_CHECKING:
    from pathlib import Path

    from infrastructure.settings import Settings

QUESTIONS = (
    "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?",
    "Why was checkout slow on 2025-01-01?",
)


def _one_line_error(result: subprocess.CompletedProcess[str], *said: str) -> None:
    stderr = result.stderr
    assert result.returncode == 2, stderr
    assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    for words in said:
        assert words in " ".join(stderr.split()), stderr


def test_the_export_writes_one_file_per_view_and_says_so(
    settings: Settings, tmp_path: Path
) -> None:
    env = store_env(settings)
    assert harness("db", "init", "--sample", env=env, cwd=tmp_path).returncode == 0
    for question in QUESTIONS:
        asked = harness("ask", question, env=env, cwd=tmp_path)
        assert asked.returncode == 0, asked.stderr
    out = tmp_path / "out"
    done = harness(
        "analytics", "export", "--since", "2000-01-01", "--out", str(out), env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(VIEWS)
    for line, view in zip(lines, VIEWS, strict=True):
        path = out / f"{view.name}.parquet"
        table = pq.read_table(path)
        assert line == f"wrote {path}: {table.num_rows} rows of {view.name}"
        assert table.schema == arrow_schema(view)
    assert pq.read_table(out / "analytics_runs.parquet").num_rows == len(QUESTIONS)
    csv = harness(
        "analytics", "export", "--format", "csv", "--since", "2000-01-01", "--until", "2000-01-02",
        "--out", str(tmp_path / "csv"), env=env, cwd=tmp_path,
    )  # fmt: skip
    assert csv.returncode == 0, csv.stderr
    assert "wrote" in csv.stdout and ": 0 rows of analytics_runs" in csv.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--since", "yesterday"], ["--since 'yesterday' is not a day", "YYYY-MM-DD"]),
        (["--since", "2026-11-02", "--until", "2026-11-01"], ["--since 2026-11-02 is after"]),
        (["--since", "2026-11-01", "--until", "2026-13-01"], ["--until '2026-13-01'"]),
        (["--since", "2026-11-01", "--format", "xlsx"], ["--format 'xlsx' is not one of"]),
        (["--since", "2026-11-01", "--db", "mysql://x"], ["--db:"]),
        (["--out", "x"], ["Missing option '--since'"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    sqlite_settings: Settings, tmp_path: Path, args: list[str], said: list[str]
) -> None:
    out = ["--out", str(tmp_path / "out")] if "--out" not in args else []
    result = harness(
        "analytics", "export", *args, *out, env=store_env(sqlite_settings), cwd=tmp_path
    )
    _one_line_error(result, *said)
    assert not (tmp_path / "out").exists()


def test_an_out_that_is_a_file_is_refused(sqlite_settings: Settings, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("mine")
    result = harness(
        "analytics", "export", "--since", "2026-11-01", "--out", str(taken),
        env=store_env(sqlite_settings), cwd=tmp_path,
    )  # fmt: skip
    _one_line_error(result, "is a file")
    assert taken.read_text() == "mine"


def test_a_database_without_read_tables_is_told_to_init(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    result = harness(
        "analytics", "export", "--since", "2026-11-01", "--out", str(tmp_path / "out"),
        "--db", url, env={}, cwd=tmp_path,
    )  # fmt: skip
    _one_line_error(result, "harness db init")


def test_without_pyarrow_the_export_says_how_to_install_it(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    env = store_env(sqlite_settings)
    assert harness("db", "init", env=env, cwd=tmp_path).returncode == 0
    no_pyarrow = "import sys; sys.modules['pyarrow'] = None; from cli.main import app; app()"
    result = subprocess.run(
        [sys.executable, "-c", no_pyarrow, "analytics", "export", "--since", "2026-11-01",
         "--out", str(tmp_path / "out")],
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **env},
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    _one_line_error(result, "pyarrow", "diagnosis-harness[analytics]")
