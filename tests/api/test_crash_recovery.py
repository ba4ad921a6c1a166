"""A worker killed with runs in flight: real ``harness serve`` processes, kill -9, recovery.

Every run's routing call hangs (a scripted scenario), so the runs stay in flight until their
worker dies. After the kill no run may stay RUNNING: each ends FAILED (WORKER_LOST), its feed
ends with ``failure`` then ``done``, and rebuilding the read tables gives the live rows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bootstrap.composition import bootstrap
from infrastructure.settings import Settings
from projections.runner import Projector
from tests.api._serve import db_init_sample, free_port, read_all, wait_until_up
from tests.api.test_streams import QUESTION
from tests.api.test_workers import HARNESS, ROOT
from tests.integration._projection_helpers import dump

RUNS = 20
WAIT = 60.0
"""Seconds any awaited condition gets (a bound, not an expected duration)."""
HANG = "# Every run's routing call hangs: it stays in flight until its worker dies.\n" + (
    "route: {hang: true}\n"
)


def _env(settings: Settings, tmp_path: Path, **extra: str) -> dict[str, str]:
    scenario = tmp_path / "hang.yaml"
    scenario.write_text(HANG)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    return clean | {
        "PYTHONPATH": str(ROOT) + os.pathsep + clean.get("PYTHONPATH", ""),
        "HARNESS_DATABASE_URL": settings.database_url,
        "HARNESS_DATABASE_SCHEMA": settings.database_schema,
        "HARNESS_MODEL": f"scripted:{scenario}",
        "HARNESS_MAX_CONCURRENT_RUNS": str(RUNS),
        "HARNESS_MODEL_TIMEOUT": "600",  # nothing but the kill ends these runs
        "HARNESS_RUN_DEADLINE": "900",
        "HARNESS_WORKER_LEASE_TTL": "10",
        "HARNESS_RECOVERY_INTERVAL": "0.5",
        "HARNESS_PROJECTION_POLL": "0.2",
        "HARNESS_FEED_POLL": "0.2",
        **extra,
    }


class Processes:
    """The processes a test starts; all are stopped (and checked for tracebacks) at the end."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env, self.cwd = env, cwd
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [*HARNESS, *args], env=self.env, cwd=self.cwd, stderr=subprocess.PIPE, text=True
        )
        self.started.append(process)
        return process

    def serve(self) -> tuple[str, subprocess.Popen[str]]:
        base = f"http://127.0.0.1:{free_port()}"
        process = self.start("serve", "--port", base.rsplit(":", 1)[1])
        wait_until_up(base, process)
        return base, process

    def kill(self, process: subprocess.Popen[str]) -> None:
        """kill -9: no clean-up of any kind runs in it."""
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        assert process.returncode == -signal.SIGKILL
        self.started.remove(process)

    def stop(self) -> None:
        """Stop the others gracefully; none may have printed a traceback."""
        running, self.started = self.started, []
        for process in running:
            process.terminate()
        for process in running:
            _, stderr = process.communicate(timeout=60)
            assert "Traceback" not in stderr, stderr


@pytest.fixture
def sqlite(sqlite_settings: Settings, tmp_path: Path) -> Iterator[Processes]:
    processes = Processes(_env(sqlite_settings, tmp_path), tmp_path)
    try:
        yield processes
    finally:
        processes.stop()


def _until(what: str, check: Any) -> Any:
    """Poll ``check()`` until it returns something truthy (bounded by :data:`WAIT`)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:  # another process's progress: nothing else to wait on
        found = check()
        if found:
            return found
        time.sleep(0.1)
    pytest.fail(f"gave up waiting for {what}")


def _runs(client: httpx.Client, base: str, status: str) -> set[str]:
    page = client.get(f"{base}/v1/runs", params={"status": status, "limit": 100})
    assert page.status_code == 200, page.text
    return {row["run_id"] for row in page.json()["data"]}


def _start(client: httpx.Client, base: str, count: int) -> set[str]:
    started = set()
    for _ in range(count):
        created = client.post(f"{base}/v1/runs", json={"query": QUESTION})
        assert created.status_code == 202, created.text
        started.add(created.json()["run_id"])
    return started


def _caught_up(client: httpx.Client, base: str) -> bool:
    status = client.get(f"{base}/v1/projections").json()
    return all(p["lag"] == 0 for p in status["data"])


def _check_swept(client: httpx.Client, base: str, run_ids: set[str]) -> None:
    for run_id in run_ids:
        row = client.get(f"{base}/v1/runs/{run_id}").json()
        assert (row["status"], row["termination_state"], row["termination_reason"]) == (
            "FAILED",
            "FAILED",
            "WORKER_LOST",
        ), row
        feed = read_all(client, "GET", f"{base}/v1/runs/{run_id}/stream")
        assert [e.event for e in feed][0] == "metadata"
        assert [e.event for e in feed][-2:] == ["failure", "done"], feed
        assert feed[-2].data["termination_reason"] == "WORKER_LOST"
        assert feed[-1].data["release_outcome"] == "FAILED"


def _rebuild_equals(settings: Settings, live: dict[str, list[dict[str, Any]]]) -> None:
    with bootstrap(settings) as services:
        store, engine = services.store, services.engine
        head = store.head()
        assert {row["position"] for row in live["projection_tracking"]} == {head}
        assert Projector(store, engine).rebuild() > 0
        assert dump(engine) == live


def _dump(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    with bootstrap(settings) as services:
        return dump(services.engine)


def test_runs_of_a_killed_worker_end_worker_lost_after_a_restart(
    sqlite: Processes, sqlite_settings: Settings
) -> None:
    base, worker = sqlite.serve()
    with httpx.Client(timeout=WAIT) as client:
        run_ids = _start(client, base, RUNS)
        _until("20 RUNNING runs", lambda: _runs(client, base, "RUNNING") == run_ids)

        sqlite.kill(worker)
        base, _ = sqlite.serve()  # the same database, a new process: it sweeps at start-up

        _until("20 FAILED runs", lambda: _runs(client, base, "FAILED") == run_ids)
        assert _runs(client, base, "RUNNING") == set()
        _check_swept(client, base, run_ids)
        _until("the projections to catch up", lambda: _caught_up(client, base))
    sqlite.stop()
    _rebuild_equals(sqlite_settings, _dump(sqlite_settings))


@pytest.fixture
def postgres(pg_settings: Settings, tmp_path: Path) -> Iterator[Processes]:
    db_init_sample(pg_settings)
    env = _env(pg_settings, tmp_path, HARNESS_PROJECTIONS_IN_PROCESS="false")
    processes = Processes(env, tmp_path)
    try:
        processes.start("projections", "run")
        yield processes
    finally:
        processes.stop()


def test_a_live_worker_sweeps_the_runs_of_a_killed_one_and_keeps_its_own(
    postgres: Processes, pg_settings: Settings
) -> None:
    (doomed, doomed_worker), (alive, _) = postgres.serve(), postgres.serve()
    with httpx.Client(timeout=WAIT) as client:
        lost = _start(client, doomed, RUNS)
        kept = _start(client, alive, 2)
        _until("22 RUNNING runs", lambda: _runs(client, alive, "RUNNING") == lost | kept)

        postgres.kill(doomed_worker)
        # An operator's sweep races the live worker's: neither touches the live worker's runs.
        recovered = subprocess.run(
            [*HARNESS, "runs", "recover", "--json"],
            env=postgres.env,
            cwd=postgres.cwd,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert recovered.returncode == 0, recovered.stderr
        report = json.loads(recovered.stdout)
        assert {r["run_id"] for r in report["ended"]} <= lost
        assert report["live"] == len(kept)

        _until("20 FAILED runs", lambda: _runs(client, alive, "FAILED") == lost)
        assert _runs(client, alive, "RUNNING") == kept
        _check_swept(client, alive, lost)
        for run_id in kept:
            assert client.post(f"{alive}/v1/runs/{run_id}/cancel").status_code == 200
        _until("the kept runs to end", lambda: _runs(client, alive, "CANCELLED") == kept)
        _until("the projections to catch up", lambda: _caught_up(client, alive))
        live = _dump(pg_settings)
    postgres.stop()
    _rebuild_equals(pg_settings, live)
