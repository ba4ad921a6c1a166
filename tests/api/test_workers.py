"""Several workers on PostgreSQL: real ``harness serve`` processes and a projection process.

A run executes on worker A; worker B streams it and cancels it. A notices at its next boundary
(its model call is waited for in slices that look at the run) and ends the run; the projection
process applies the end and NOTIFYs, and B's stream receives it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from infrastructure.settings import Settings
from tests.api._serve import TIMEOUT, Event, db_init_sample, events, free_port, wait_until_up
from tests.api.test_streams import HANGS, QUESTION

HARNESS = [sys.executable, "-c", "from cli.main import app; app()"]
ROOT = Path(__file__).resolve().parents[2]


def _env(settings: Settings) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    return clean | {
        "PYTHONPATH": str(ROOT) + os.pathsep + clean.get("PYTHONPATH", ""),
        "HARNESS_DATABASE_URL": settings.database_url,
        "HARNESS_DATABASE_SCHEMA": settings.database_schema,
        "HARNESS_MODEL": HANGS,
        "HARNESS_PROJECTIONS_IN_PROCESS": "false",
        "HARNESS_PROJECTION_POLL": "0.2",
        "HARNESS_FEED_POLL": "0.2",
    }


@pytest.fixture
def workers(pg_settings: Settings, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two service workers and one projection process on one PostgreSQL schema."""
    db_init_sample(pg_settings)
    env = _env(pg_settings)
    processes: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [*HARNESS, *args], env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True
        )
        processes.append(process)
        return process

    try:
        start("projections", "run")
        bases = []
        for _ in range(2):
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            wait_until_up(base, start("serve", "--port", str(port)))
            bases.append(base)
        yield bases[0], bases[1]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            _, stderr = process.communicate(timeout=30)
            assert "Traceback" not in stderr, stderr


def test_a_run_on_one_worker_is_streamed_and_cancelled_through_another(
    workers: tuple[str, str],
) -> None:
    a, b = workers
    with httpx.Client(timeout=TIMEOUT) as client:
        created = client.post(f"{a}/v1/runs", json={"query": QUESTION})
        assert created.status_code == 202, created.text
        run_id = created.json()["run_id"]

        feed: list[Event] = []
        diagnosing = threading.Event()

        def watch() -> None:
            with client.stream("GET", f"{b}/v1/runs/{run_id}/stream") as response:
                for event in events(response):
                    feed.append(event)
                    if event.data.get("status") == "DIAGNOSIS_RUNNING":
                        diagnosing.set()

        watcher = threading.Thread(target=watch)
        watcher.start()
        assert diagnosing.wait(60), f"B never saw the run diagnosing: {feed}"

        cancelled = client.post(f"{b}/v1/runs/{run_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["cancelled"] is True
        watcher.join(60)
        assert not watcher.is_alive(), "B's stream did not end"

        assert [e.event for e in feed][-1] == "failure"
        assert feed[-1].data["release_outcome"] == "CANCELLED"
        assert "done" not in [e.event for e in feed]
        run = client.get(f"{b}/v1/runs/{run_id}").json()
        assert (run["status"], run["termination_state"], run["termination_reason"]) == (
            "CANCELLED",
            "CANCELLED",
            "USER_REQUESTED",
        )
        # Within one boundary: after the cancel, A recorded nothing on the run but its end.
        trace = client.get(f"{a}/v1/runs/{run_id}/trace").json()["data"]
        types = [t["event_type"] for t in trace if t["stream_id"] == run_id]
        after = types[types.index("CANCELLATION_REQUESTED") + 1 :]
        assert after == ["RUN_TERMINATED", "RUN_FINISHED"], types
