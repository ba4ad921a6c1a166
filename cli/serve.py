"""``harness serve``: one worker on the embedded default, or several with a projection process.

Without API keys the service serves one local user and binds to loopback only: it refuses any
other address. With ``--workers N`` (PostgreSQL only: several processes write to one SQLite
file poorly), the workers leave the projections to one ``harness projections run`` process that
this command starts and restarts if it dies.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from typing import TYPE_CHECKING

from api.http_protocol import PROTOCOL
from cli.common import err_console, fail

if TYPE_CHECKING:
    from collections.abc import Callable

    from infrastructure.settings import Settings

log = logging.getLogger(__name__)

HARNESS = [sys.executable, "-c", "from cli.main import app; app()"]
RESTART_AFTER = 1.0
"""Seconds before a projection process that died is started again."""
WORKER_HEALTHCHECK = 60
"""Seconds uvicorn waits for a worker to answer its health check (a cold start included)."""


def check_bind(settings: Settings, host: str, workers: int) -> None:
    """Refuse what would expose the service or corrupt its store; exit 2 saying why."""
    from api.metrics import multiprocess_problem

    refuse_exposed(bool(settings.api_keys), host, "read and start runs")
    problem = multiprocess_problem(os.environ)
    if workers == 1 and problem:  # several workers get a directory of their own
        fail(problem)
    if workers > 1 and settings.database.kind != "postgres":
        fail(
            "several workers need PostgreSQL (HARNESS_DATABASE_URL=postgresql://…); the embedded "
            "SQLite default serves with one worker"
        )
    from infrastructure.otlp import configured_endpoint
    from infrastructure.settings import ConfigurationError

    try:
        configured_endpoint(os.environ)  # the live trace exporter's receiver, if any
    except ConfigurationError as error:
        fail(f"invalid configuration: {error}")


def refuse_exposed(keyed: bool, host: str, could: str) -> None:
    """Exit 2 when a server without API keys would bind where other machines reach it.

    The rule of every server the harness starts: without keys, loopback only.
    """
    from api.auth import is_loopback

    if not keyed and not is_loopback(host):
        fail(
            f"refusing to serve on {host} without API keys: anyone who can reach it could "
            f"{could}. Set HARNESS_API_KEYS (see the README), or bind to 127.0.0.1"
        )


def check_port(host: str, port: int) -> socket.socket:
    """Bind ``host:port`` now, so a taken port is one line and exit 2 before anything starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        reason = "it is already in use" if error.errno == errno.EADDRINUSE else error.strerror
        fail(
            f"cannot serve on {host}:{port}: {reason} (choose another with --port or HARNESS_PORT)"
        )
    sock.set_inheritable(True)
    return sock


def serve_one(settings: Settings, sock: socket.socket) -> None:
    """One worker with the projections in its process (the embedded default), on ``sock``."""
    import uvicorn

    from api.main import create_app

    host, port = sock.getsockname()[:2]
    err_console().print(
        f"serving on http://{_url_host(host)}:{port} ({settings.database.describe()})"
    )
    config = uvicorn.Config(create_app(settings), host=host, port=port, http=PROTOCOL)
    uvicorn.Server(config).run(sockets=[sock])


def serve_many(settings: Settings, sock: socket.socket, workers: int) -> None:
    """``workers`` uvicorn processes, and one supervised projection process."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    sock.close()  # uvicorn binds it again for its workers (a moment later)
    os.environ["HARNESS_PROJECTIONS_IN_PROCESS"] = "false"  # the workers inherit it
    # The workers' own metrics (refusals, open streams) go to files here, summed by every worker's
    # GET /metrics (multiprocess mode); private to this serve: no stale file of another counts.
    metrics_dir = tempfile.mkdtemp(prefix="harness-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    stop = threading.Event()
    supervisor = threading.Thread(
        target=supervise,
        args=([*HARNESS, "projections", "run"], stop),
        name="harness-projection-supervisor",
        daemon=True,
    )
    supervisor.start()
    err_console().print(
        f"serving on http://{_url_host(host)}:{port} with {workers} workers and a projection"
        f" process ({settings.database.describe()})"
    )
    try:
        uvicorn.run(
            "api.main:create_app_from_environment",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            http=PROTOCOL,
            # uvicorn kills a worker that does not answer its health check in time; a cold start
            # on a loaded machine (imports, opening pools, the first recovery sweep) takes longer
            # than its 5 s default, and a worker killed then is logged as "died".
            timeout_worker_healthcheck=WORKER_HEALTHCHECK,
        )
    finally:
        stop.set()
        supervisor.join(timeout=15)
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


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
