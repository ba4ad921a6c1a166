"""``harness serve --workers 2`` as an operator starts it: a real process tree on PostgreSQL.

On a loaded 2-core machine a worker's cold start took longer than uvicorn's 5 s health check,
and uvicorn killed it and logged "Child process … died". Here the machine is loaded on purpose
while the workers start, and the service must come up without any worker being replaced.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from infrastructure.settings import Settings
from tests.api._serve import db_init_sample, free_port, wait_until_up
from tests.api.test_workers import ROOT

HARNESS = str(Path(sys.executable).with_name("harness"))
"""The installed console script, as an operator runs it: uvicorn's spawned workers import it."""
BURN = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass\n"


@contextmanager
def _cpu_load(processes: int) -> Iterator[None]:
    """Busy processes (bounded to two minutes each), stopped when the block ends."""
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(processes)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(timeout=30)


@contextmanager
def _serving(
    pg_settings: Settings, tmp_path: Path, **env: str
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``harness serve --workers 2`` on ``pg_settings``' store; its base URL and its process.

    Stopped with Ctrl-C when the block ends; read its output with ``communicate`` then.
    """
    db_init_sample(pg_settings)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")} | {
        "PYTHONPATH": str(ROOT),
        "HARNESS_DATABASE_URL": pg_settings.database_url,
        "HARNESS_DATABASE_SCHEMA": pg_settings.database_schema,
    }
    port = free_port()
    serve = subprocess.Popen(
        [HARNESS, "serve", "--workers", "2", "--port", str(port)],
        env=clean | env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield f"http://127.0.0.1:{port}", serve
    finally:
        if serve.returncode is None:
            serve.send_signal(signal.SIGINT)


def test_two_workers_start_on_a_loaded_machine_without_being_replaced(
    pg_settings: Settings, tmp_path: Path
) -> None:
    with _cpu_load(6), _serving(pg_settings, tmp_path) as (base, serve):
        try:
            wait_until_up(base, serve, timeout=120)
            answered = {httpx.get(f"{base}/healthz", timeout=10).status_code for _ in range(20)}
        finally:
            serve.send_signal(signal.SIGINT)
            out, err = serve.communicate(timeout=120)
    assert answered == {200}
    assert "with 2 workers and a projection process" in err
    assert "died" not in err and "not ready in time" not in err, err
    assert "Traceback" not in out + err


def test_the_workers_time_requests_as_configured(pg_settings: Settings, tmp_path: Path) -> None:
    """uvicorn's worker processes time requests too, at HARNESS_REQUEST_READ_TIMEOUT."""
    env = {"HARNESS_REQUEST_READ_TIMEOUT": "0.5"}
    with _serving(pg_settings, tmp_path, **env) as (base, serve):
        try:
            wait_until_up(base, serve, timeout=120)
            with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), 60) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
                answer = b"".join(iter(lambda: sock.recv(4096), b""))
        finally:
            serve.send_signal(signal.SIGINT)
            out, err = serve.communicate(timeout=120)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer
    assert "Traceback" not in out + err
