"""``GET /metrics`` under ``harness serve --workers 2``: every worker answers the same totals.

Each worker runs at most one run (the scripted model hangs), so two admitted runs are on two
workers, and further starts are refused by whichever worker gets them. Scrapes over fresh
connections land on either worker; each must report the log-derived values of the one read side
and the sum of both workers' refusals and open streams (prometheus_client's multiprocess mode in
the private directory ``serve`` creates, and removes when it stops).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import httpx

from infrastructure.settings import Settings
from tests.api._serve import db_init_sample, events, free_port, wait_until_up
from tests.api.test_metrics import lags, until, value
from tests.api.test_serve_workers import HARNESS
from tests.api.test_streams import HANGS, QUESTION
from tests.api.test_workers import ROOT
from tests.integration._metrics_sql import Series, log_derived, parse

STREAMS = 3
SCRAPES = 20
DEADLINE_S = 60.0


def _scrape(base: str) -> Series:
    """One scrape over a connection of its own (so either worker may answer it)."""
    response = httpx.get(f"{base}/metrics", timeout=30)
    assert response.status_code == 200, response.text
    return parse(response.text)


def _start_two_runs(base: str) -> tuple[list[str], int]:
    """Start runs until two are admitted (one per worker); the runs and the refusals."""
    admitted: list[str] = []
    refused = 0
    for _ in range(200):
        answer = httpx.post(f"{base}/v1/runs", json={"query": QUESTION}, timeout=30)
        if answer.status_code == 429:
            refused += 1
        else:
            assert answer.status_code == 202, answer.text
            admitted.append(answer.json()["run_id"])
        if len(admitted) == 2 and refused >= 2:
            break
    assert len(admitted) == 2, (admitted, refused)
    return admitted, refused


def _watch(base: str, run_id: str, watching: threading.Event) -> None:
    with (
        httpx.Client(timeout=DEADLINE_S) as client,
        client.stream("GET", f"{base}/v1/runs/{run_id}/stream") as response,
    ):
        for event in events(response):
            if event.data.get("status") == "DIAGNOSIS_RUNNING":
                watching.set()


def _serve(settings: Settings, tmp_path: Path, port: int) -> subprocess.Popen[str]:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "PROMETHEUS"))}
    env |= {
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(scratch),
        "HARNESS_DATABASE_URL": settings.database_url,
        "HARNESS_DATABASE_SCHEMA": settings.database_schema,
        "HARNESS_MODEL": HANGS,
        "HARNESS_MAX_CONCURRENT_RUNS": "1",
        "HARNESS_PROJECTION_POLL": "0.2",
        "HARNESS_FEED_POLL": "0.2",
    }
    return subprocess.Popen(
        [HARNESS, "serve", "--workers", "2", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_both_workers_report_the_same_totals(pg_settings: Settings, tmp_path: Path) -> None:
    db_init_sample(pg_settings)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = _serve(pg_settings, tmp_path, port)
    try:
        wait_until_up(base, serve, timeout=120)
        runs, refused = _start_two_runs(base)
        watched = [threading.Event() for _ in range(STREAMS)]
        watchers = [
            threading.Thread(target=_watch, args=(base, runs[i % 2], seen))
            for i, seen in enumerate(watched)
        ]
        for watcher in watchers:
            watcher.start()
        assert all(seen.wait(DEADLINE_S) for seen in watched)
        until(
            lambda: (
                set(lags(_scrape(base)).values()) == {0}
                and value(_scrape(base), "harness_runs_started_total") == 2
            ),
            "the projection process caught up",
        )
        scrapes = [_scrape(base) for _ in range(SCRAPES)]
        for series in scrapes:
            assert value(series, "harness_admission_refusals_total") == refused
            assert value(series, "harness_sse_streams_open") == STREAMS
            assert log_derived(series) == log_derived(scrapes[0])
            # each worker's limits, not their sum (no keys: no share of one key's own)
            assert value(series, "harness_runs_limit") == 1
            assert value(series, "harness_runs_per_key_limit") == 1
            assert value(series, "harness_sse_streams_limit") == 1000
            assert value(series, "harness_sse_streams_per_key_limit") == 1000
            assert value(series, "harness_sse_streams_open_by_key", key="local") == STREAMS
        assert value(scrapes[0], "harness_runs_in_progress") == 2
        for run_id in runs:
            httpx.post(f"{base}/v1/runs/{run_id}/cancel", timeout=30)
        for watcher in watchers:
            watcher.join(DEADLINE_S)
        until(
            lambda: all(value(_scrape(base), "harness_sse_streams_open") == 0 for _ in range(4)),
            "the ended streams are no longer counted by any worker",
        )
    finally:
        serve.send_signal(signal.SIGINT)
        out, err = serve.communicate(timeout=120)
    assert "Traceback" not in out + err, err
    assert list((tmp_path / "tmp").glob("harness-metrics-*")) == []  # the private directory
