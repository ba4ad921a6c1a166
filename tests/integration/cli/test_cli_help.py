"""``harness --help`` and every command's help: plain words, and no heavy imports to show them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer.main

from cli.main import app

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("sqlalchemy", "fastapi", "uvicorn", "psycopg", "eventsourcing", "openai", "pydantic")
"""What `harness --help` must not import (each costs tens to hundreds of milliseconds)."""


def _commands(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_help_imports_neither_the_web_nor_the_database_stack() -> None:
    probe = (
        "import sys\nfrom cli.main import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = _run(probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def test_every_help_names_values_in_words_not_types() -> None:
    paths = _commands(typer.main.get_command(app))
    assert ("runs", "list") in paths and ("audit", "verify") in paths
    for path in paths:
        result = _run("from cli.main import app; app()", *path, "--help")
        assert result.returncode == 0, (path, result.stderr)
        text = result.stdout
        assert "Usage: " in text
        for noise in ("<str>", "<bool>", "<int", "<float", "<path>", "╭"):
            assert noise not in text, (path, noise, text)


def test_version_is_the_installed_distributions_on_stdout_and_needs_no_command() -> None:
    from importlib.metadata import version

    for args in (["--version"], ["--version", "db", "status"]):
        result = _run("from cli.main import app; app()", *args)
        assert (result.returncode, result.stderr) == (0, ""), args
        assert result.stdout == f"harness {version('diagnosis-harness')}\n", args
    probe = (
        "import sys\nfrom cli.main import app\n"
        "try:\n    app(['--version'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    assert _run(probe).stdout.splitlines()[-1] == "[]"  # as cheap as --help
