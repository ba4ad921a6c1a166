"""A private PostgreSQL cluster for tests that stop and restart the server.

The machine's shared server (``tests/conftest.py``) is never restarted: other tests and people
use it. A test that needs PostgreSQL to go away and come back gets a cluster of its own in a
temporary directory, on a free loopback port, with trust authentication, torn down at the end.
We run as root and ``initdb`` refuses root, so the cluster belongs to the ``postgres`` user and
every ``pg_ctl`` runs under ``runuser``. Without the binaries the test skips with the reason,
except under ``CI=true``, where it fails (as the shared-server tests do). Wrap
:func:`private_postgres` in a fixture of the scope you need.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

PG_BIN = Path(os.environ.get("HARNESS_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
"""Where ``initdb`` and ``pg_ctl`` are (override with ``HARNESS_TEST_PG_BIN``)."""
OWNER = "postgres"
DBNAME = "harness_faults"
COMMAND_TIMEOUT = 60.0
"""A bound on one ``initdb``/``pg_ctl`` call (they return as soon as the server is up or down)."""


@dataclass
class PrivatePostgres:
    """A PostgreSQL cluster of this test's own: stop it, start it, restart it."""

    root: Path
    port: int

    @property
    def data(self) -> Path:
        """The cluster's data directory."""
        return self.root / "data"

    @property
    def url(self) -> str:
        """The test database's URL (trust authentication, no password)."""
        return f"postgresql://{OWNER}@127.0.0.1:{self.port}/{DBNAME}"

    def start(self) -> None:
        """Start the server; returns once it accepts connections."""
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
            # durability against power loss is not under test: a fast stop checkpoints, and an
            # immediate stop leaves the WAL in the page cache for the restart's crash recovery
            " -c fsync=off -c max_connections=200"
        )
        self._pg_ctl("start", "-w", "-o", options, "-l", str(self.root / "server.log"))

    def stop(self, mode: str = "fast") -> None:
        """Stop the server the way a restart does (``-m fast``: sessions are terminated).

        ``mode="immediate"`` stops it the way a crash does: every backend exits at once, without
        releasing its locks or committing, and the next start recovers from the WAL.
        """
        self._pg_ctl("stop", "-w", "-m", mode)

    def accepts_connections(self) -> bool:
        """Whether a new connection to the test database succeeds now."""
        try:
            with psycopg.connect(self.url, connect_timeout=2):
                return True
        except psycopg.Error:
            return False

    def log(self) -> str:
        """The server's log so far (for failure messages)."""
        path = self.root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _pg_ctl(self, *args: str) -> None:
        _run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), *args])


def _run(command: list[str]) -> None:
    done = subprocess.run(
        ["runuser", "-u", OWNER, "--", *command],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _missing() -> str | None:
    """Why a private cluster cannot be made here, or None."""
    for tool in ("initdb", "pg_ctl"):
        if not (PG_BIN / tool).exists():
            return f"{PG_BIN / tool} is missing (install postgresql-15 or set HARNESS_TEST_PG_BIN)"
    if shutil.which("runuser") is None:
        return "runuser is missing (util-linux)"
    try:
        pwd.getpwnam(OWNER)
    except KeyError:
        return f"there is no {OWNER!r} user to own the cluster"
    if os.geteuid() != 0:
        return "a private cluster needs root (initdb runs as the postgres user through runuser)"
    return None


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A running private cluster with an empty test database, removed afterwards.

    Skips the test with the reason when one cannot be made here, except under ``CI=true``,
    where it fails.
    """
    why = _missing()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why} (under CI=true the fault tests must run)")
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="harness-pg-"))
    owner = pwd.getpwnam(OWNER)
    os.chown(root, owner.pw_uid, owner.pw_gid)
    cluster = PrivatePostgres(root, _free_port())
    try:
        _run(
            [str(PG_BIN / "initdb"), "-D", str(cluster.data), "-A", "trust", "-U", OWNER]
            + ["-E", "UTF8", "--no-sync"]
        )
        cluster.start()
        with psycopg.connect(
            f"postgresql://{OWNER}@127.0.0.1:{cluster.port}/postgres", autocommit=True
        ) as connection:
            connection.execute(f"CREATE DATABASE {DBNAME}")
        yield cluster
    finally:
        if (cluster.data / "postmaster.pid").exists():
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
