"""The install step the README's two commands share, its lock file, the hooks and the benches."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/calls.log"
"""
INSTALL = "install --quiet --disable-pip-version-check -c requirements/constraints.txt -e "


def _ensure(project: Path, spec: str) -> list[str]:
    subprocess.run(
        ["bash", "-c", f"source {ROOT / 'scripts' / '_venv.sh'} && ensure_venv '{spec}'"],
        cwd=project,
        check=True,
        timeout=30,
    )
    return (project / ".venv" / "bin" / "calls.log").read_text().splitlines()


def _project(tmp_path: Path) -> Path:
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)  # a venv that only records what pip was asked to do
    python.chmod(0o755)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "constraints.txt").write_text("fastapi==0.165.0\n")
    return tmp_path


def test_the_project_is_installed_again_only_when_its_definition_changed(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert _ensure(project, ".") == [f"-m pip {INSTALL}."]
    assert len(_ensure(project, ".")) == 1  # nothing changed: no pip at all
    assert _ensure(project, ".[dev]")[-1] == f"-m pip {INSTALL}.[dev]"
    assert len(_ensure(project, ".[dev]")) == 2
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n")
    assert len(_ensure(project, ".")) == 3


def test_a_changed_lock_file_installs_again_with_its_pins(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert len(_ensure(project, ".[dev]")) == 1
    (project / "requirements" / "constraints.txt").write_text("fastapi==0.166.0\n")
    calls = _ensure(project, ".[dev]")
    assert calls == [f"-m pip {INSTALL}.[dev]"] * 2
    assert len(_ensure(project, ".[dev]")) == 2  # the new lock is remembered


def test_the_lock_file_pins_every_dependency_of_the_project_exactly() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
    lines = (ROOT / "requirements" / "constraints.txt").read_text().splitlines()
    pins = [line for line in lines if line and not line.startswith((" ", "#"))]
    assert [pin for pin in pins if not re.fullmatch(r"[\w.-]+==[\w.+!-]+", pin)] == []
    pinned = {_normal(pin.split("==")[0]) for pin in pins}
    assert {_normal(re.split(r"[\[<>=~! ;]", need)[0]) for need in wanted} - pinned == set()


def _pins(lock: str) -> dict[str, str]:
    lines = (ROOT / "requirements" / lock).read_text().splitlines()
    pins = [line for line in lines if line and not line.startswith((" ", "#"))]
    return {_normal(pin.split("==")[0]): pin.split("==")[1] for pin in pins}


def test_the_bench_lock_pins_the_bench_extra_and_agrees_with_the_main_lock() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    bench, main = _pins("bench-constraints.txt"), _pins("constraints.txt")
    assert {_normal(re.split(r"[\[<>=~! ;]", need)[0]) for need in extras["bench"]} <= set(bench)
    assert {name: bench.get(name) for name in main} == main  # the main lock, untouched
    assert "langgraph" not in main  # never in the default install, nor in dev


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _hooks() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}


def test_the_pre_commit_hooks_reject_what_scripts_test_rejects(tmp_path: Path) -> None:
    hooks = _hooks()
    assert {hook["language"] for hook in hooks.values()} == {"system"}  # no network needed
    unformatted, unused_import = tmp_path / "a.py", tmp_path / "b.py"
    unformatted.write_text("x=1\n")
    unused_import.write_text("import os\n")
    for hook_id, bad in (("ruff-format", unformatted), ("ruff-check", unused_import)):
        run = [*shlex.split(hooks[hook_id]["entry"]), str(bad)]
        assert subprocess.run(run, cwd=ROOT, capture_output=True, timeout=60).returncode == 1
    assert hooks["mypy"]["entry"] in (ROOT / "scripts" / "test").read_text().splitlines()


@pytest.mark.parametrize(
    "bench", ["append", "run", "projections", "sse", "metrics", "peers", "throughput"]
)
def test_every_bench_runs_as_a_module_of_the_bench_package(bench: str) -> None:
    run = [sys.executable, "-m", f"bench.{bench}", "--help"]
    done = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python -m bench.{bench} ")
    development = (ROOT / "docs" / "development.md").read_text()
    assert f".venv/bin/python -m bench.{bench} " in development
