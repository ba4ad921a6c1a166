"""The service as a user runs it: ``harness serve`` in its own process, real HTTP, a real file.

The embedded default follows the log into the read tables inside the service process, so a run
made by another process (``harness ask``) shows up in ``diagnosis_run`` without any projection
process of its own.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api._serve import free_port

HARNESS = [sys.executable, "-c", "from cli.main import app; app()"]
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"


def _env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    root = str(Path(__file__).resolve().parents[3])
    clean["PYTHONPATH"] = root + os.pathsep + clean.get("PYTHONPATH", "")
    return clean | {
        "HARNESS_DATABASE_URL": f"sqlite:///{tmp_path / 'harness.db'}",
        "HARNESS_PROJECTION_POLL": "0.1",
    }


def _get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _until(condition: object, what: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` (a callable) until it holds; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():  # type: ignore[operator]
                return
        except (OSError, sqlite3.Error):
            pass  # not up yet
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [*HARNESS, "serve", "--port", str(port)],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: _get(f"{base}/healthz")[0] == 200, "the service to answer")
        yield base
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
        assert "Traceback" not in stderr, stderr


def test_health_and_readiness_answer_over_http(service: str) -> None:
    assert _get(f"{service}/healthz") == (200, {"status": "ok"})
    status, body = _get(f"{service}/readyz")
    assert status == 200 and body["status"] == "ready" and body["backend"] == "sqlite"


def test_the_embedded_service_projects_a_run_made_by_another_process(
    service: str, tmp_path: Path
) -> None:
    asked = subprocess.run(
        [*HARNESS, "ask", QUESTION, "--session", "ops-1"],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert asked.returncode == 0, asked.stderr

    def finished() -> list[tuple[object, ...]]:
        with sqlite3.connect(tmp_path / "harness.db") as db:
            return db.execute(
                "SELECT status, release_outcome, termination_state, intent FROM diagnosis_run"
                " WHERE session_id = 'ops-1' AND finished_at IS NOT NULL"
            ).fetchall()

    _until(finished, "the service to project the run")
    assert finished() == [("SUCCESS", "SUCCESS", "SUCCESS", "DIAGNOSIS")]
    with sqlite3.connect(tmp_path / "harness.db") as db:
        head = db.execute("SELECT MAX(rowid) FROM stored_events").fetchone()[0]
        _until(
            lambda: (
                db.execute("SELECT MIN(position) FROM projection_tracking").fetchone()[0] == head
            ),
            "every projection to reach the head",
        )
        feed = [e for (e,) in db.execute("SELECT event FROM sse_event ORDER BY seq")]
    assert feed[0] == "metadata" and feed[-2:] == ["content", "done"]
