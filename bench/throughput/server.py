"""A fresh database, ``harness serve`` on it as an operator starts it, and its CPU seconds."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from uuid import uuid4

import httpx
import psycopg
from psycopg import sql

from bench.common import PG_HOST, PG_PORT, PG_USER, pg_conninfo
from bench.throughput import POOL

ROOT = Path(__file__).resolve().parents[2]
HARNESS = str(Path(sys.executable).with_name("harness"))
"""The installed console script, as an operator runs it."""
STARTUP = 120.0
TICK = os.sysconf("SC_CLK_TCK")


@contextmanager
def fresh_database() -> Iterator[str]:
    """A new database on the local server, dropped (its sessions ended) afterwards."""
    name = f"harness_tp_{uuid4().hex[:12]}"
    with psycopg.connect(pg_conninfo("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(pg_conninfo("postgres"), autocommit=True) as conn:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            conn.execute(drop.format(sql.Identifier(name)))


def environment(database: str, clients: int) -> dict[str, str]:
    """The server's environment: the database, the run cap, small pools; no other HARNESS_*."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    return (
        kept
        | POOL
        | {
            "PYTHONPATH": str(ROOT),
            "HARNESS_DATABASE_URL": f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{database}",
            "HARNESS_MAX_CONCURRENT_RUNS": str(clients),
        }
    )


def free_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    """A running ``harness serve``: its process, base URL and database."""

    process: subprocess.Popen[bytes]
    base: str
    database: str
    log: Path


def wait_ready(server: Server) -> None:
    """Wait until the server answers ``/readyz`` with 200; fail if it exits or never does."""
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:  # another process's start-up: nothing to wait on but it
        if server.process.poll() is not None:
            tail = server.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"harness serve exited {server.process.returncode}: {tail}")
        try:
            if httpx.get(f"{server.base}/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"harness serve at {server.base} was not ready in {STARTUP:g} s")


@contextmanager
def serving(database: str, workers: int, clients: int) -> Iterator[Server]:
    """``harness db init --sample``, then ``harness serve`` on 127.0.0.1; SIGINT at the end."""
    env = environment(database, clients)
    subprocess.run([HARNESS, "db", "init", "--sample"], env=env, check=True, capture_output=True)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="harness-throughput-") as tmp:
        log = Path(tmp, "serve.log")
        command = [HARNESS, "serve", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--workers", str(workers)] if workers > 1 else []
        with log.open("wb") as out:
            process = subprocess.Popen(command, env=env, cwd=tmp, stdout=out, stderr=out)
        server = Server(process, f"http://127.0.0.1:{port}", database, log)
        try:
            wait_ready(server)
            yield server
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of one process, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def process_tree(root: int) -> list[int]:
    """``root`` and every process descended from it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except (FileNotFoundError, ProcessLookupError):
                continue
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    tree, frontier = [root], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree
