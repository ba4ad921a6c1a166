"""``harness serve``: one worker on the embedded default, or several with a projection process.

Without API keys the service serves one local user and binds to loopback only: it refuses any
other address. With ``--workers N`` (PostgreSQL only: several processes write to one SQLite
file poorly), the workers leave the projections to one ``harness projections run`` process that
this command starts and restarts if it dies.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

from api.cli_common import err_console, fail

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.store import HarnessStore
    from infrastructure.settings import Settings

log = logging.getLogger(__name__)

HARNESS = [sys.executable, "-c", "from api.cli import app; app()"]
RESTART_AFTER = 1.0
"""Seconds before a projection process that died is started again."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(settings: Settings, host: str, workers: int) -> None:
    """Refuse what would expose the service or corrupt its store; exit 2 saying why."""
    if not settings.api_keys and not is_loopback(host):
        fail(
            f"refusing to serve on {host} without API keys: anyone who can reach it could read "
            "and start runs. Set HARNESS_API_KEYS (see the README), or bind to 127.0.0.1"
        )
    if workers > 1 and settings.database.kind != "postgres":
        fail(
            "several workers need PostgreSQL (HARNESS_DATABASE_URL=postgresql://…); the embedded "
            "SQLite default serves with one worker"
        )


def serve_one(settings: Settings, store: HarnessStore, host: str, port: int) -> None:
    """One worker with the projections in its process (the embedded default)."""
    import uvicorn

    from api.main import create_app

    err_console().print(f"serving on http://{host}:{port} ({settings.database.describe()})")
    uvicorn.run(create_app(settings, store), host=host, port=port)


def serve_many(settings: Settings, host: str, port: int, workers: int) -> None:
    """``workers`` uvicorn processes, and one supervised projection process."""
    import uvicorn

    os.environ["HARNESS_PROJECTIONS_IN_PROCESS"] = "false"  # the workers inherit it
    stop = threading.Event()
    supervisor = threading.Thread(
        target=supervise,
        args=([*HARNESS, "projections", "run"], stop),
        name="harness-projection-supervisor",
        daemon=True,
    )
    supervisor.start()
    err_console().print(
        f"serving on http://{host}:{port} with {workers} workers and a projection process "
        f"({settings.database.describe()})"
    )
    try:
        uvicorn.run(
            "api.main:create_app_from_environment",
            factory=True,
            host=host,
            port=port,
            workers=workers,
        )
    finally:
        stop.set()
        supervisor.join(timeout=15)


def supervise(
    command: list[str],
    stop: threading.Event,
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> None:
    """Run ``command`` until ``stop``; start it again when it exits on its own."""
    while not stop.is_set():
        process = subprocess.Popen(command, env=os.environ.copy())
        if started is not None:
            started(process)
        while process.poll() is None:
            if stop.wait(0.5):
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                return
        err_console().print(
            f"[yellow]the projection process exited ({process.returncode}); "
            f"starting it again in {RESTART_AFTER:.0f}s[/]"
        )
        stop.wait(RESTART_AFTER)
