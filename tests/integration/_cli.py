"""Running the ``harness`` command as a user does: a real process on a real store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from infrastructure.settings import Settings

HARNESS = [sys.executable, "-c", "from cli.main import app; app()"]
ROOT = Path(__file__).resolve().parents[2]


def store_env(settings: Settings) -> dict[str, str]:
    """The HARNESS_* variables that point a ``harness`` process at ``settings``' store."""
    env = {"HARNESS_DATABASE_URL": settings.database_url}
    if settings.database.kind == "postgres":
        env["HARNESS_DATABASE_SCHEMA"] = settings.database_schema
    return env


def harness(
    *args: str, env: dict[str, str], cwd: Path, **run: Any
) -> subprocess.CompletedProcess[str]:
    """Run ``harness ARGS`` with only the given HARNESS_* variables; output captured as text."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    clean["PYTHONPATH"] = str(ROOT) + os.pathsep + clean.get("PYTHONPATH", "")
    return subprocess.run(
        [*HARNESS, *args],
        env=clean | env,
        cwd=cwd,
        capture_output="stdout" not in run,
        text=True,
        timeout=120,
        **run,
    )
