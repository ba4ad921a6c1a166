"""The install step the README's two commands share: pip runs only when pyproject.toml changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/calls.log"
"""


def _ensure(project: Path, spec: str) -> list[str]:
    subprocess.run(
        ["bash", "-c", f"source {ROOT / 'scripts' / '_venv.sh'} && ensure_venv '{spec}'"],
        cwd=project,
        check=True,
        timeout=30,
    )
    return (project / ".venv" / "bin" / "calls.log").read_text().splitlines()


def test_the_project_is_installed_again_only_when_its_definition_changed(tmp_path: Path) -> None:
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)  # a venv that only records what pip was asked to do
    python.chmod(0o755)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert len(_ensure(tmp_path, ".")) == 1
    assert len(_ensure(tmp_path, ".")) == 1  # nothing changed: no pip at all
    assert _ensure(tmp_path, ".[dev]")[-1].endswith(
        "install --quiet --disable-pip-version-check -e .[dev]"
    )
    assert len(_ensure(tmp_path, ".[dev]")) == 2
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n")
    assert len(_ensure(tmp_path, ".")) == 3
