"""Worker leases: which processes that execute runs are alive, across processes and hosts.

Every process that executes runs (a service worker, ``harness ask``) has a worker id (host, pid
and a random suffix), recorded on each ``RUN_STARTED`` it writes, and keeps a row of
``worker_lease`` fresh: it beats every third of ``HARNESS_WORKER_LEASE_TTL``, moving the row's
``expires_at`` one TTL ahead. A lease past its ``expires_at`` is EXPIRED: the worker stopped
beating. On PostgreSQL the database's clock stamps and judges the beats, so workers on hosts
whose clocks disagree still agree on expiry; SQLite serves one machine, whose clock it uses.

A lease can also be proved DEAD before it expires: its row names the process (boot id, pid
namespace, pid and start time; :mod:`infrastructure.processes`), and a sweeper on the same
machine and pid namespace sees at once when that process no longer runs (kill -9, a crash) or the
pid now belongs to another process. Elsewhere nothing is proved and only expiry counts.

``worker_lease`` is operational state, not a projection: it is not among the read tables, not
in their fingerprint, and a rebuild never touches it.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    delete,
    func,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from application.recovery import Liveness
from infrastructure.processes import process_identity, proven_dead

if TYPE_CHECKING:
    from collections.abc import Collection

    from sqlalchemy import Connection, Engine

    from application.store import HarnessStore
    from infrastructure.settings import Settings

log = logging.getLogger(__name__)

lease_metadata = MetaData()
"""Operational tables: apart from the read tables' ``metadata`` (never fingerprinted)."""

worker_lease = Table(
    "worker_lease",
    lease_metadata,
    Column("worker_id", String(200), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("process", String(120), nullable=False),
    Column("started_at", Float, nullable=False),
    Column("beat_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)
"""One row per worker process: when it last beat and until when its lease holds (epoch s)."""

LEASE_LOCK = 0x48_41_52_4C_45_41_53
"""The advisory lock that serialises creating ``worker_lease`` across processes (PostgreSQL)."""


@dataclass(frozen=True)
class WorkerIdentity:
    """One worker process: its id (recorded on its runs), host, pid and process proof."""

    worker_id: str
    host: str
    pid: int
    process: str

    @classmethod
    def of_this_process(cls) -> WorkerIdentity:
        """This process, with a fresh random suffix (a restarted pid gets another id)."""
        host, pid = socket.gethostname()[:150] or "localhost", os.getpid()
        return cls(f"{host}:{pid}:{secrets.token_hex(4)}", host, pid, process_identity(pid))


class SqlLeases:
    """The ``worker_lease`` table: beats, verdicts and pruning."""

    def __init__(self, engine: Engine) -> None:
        """Leases in ``engine``'s database (PostgreSQL: the configured schema)."""
        self.engine = engine
        self._created = False

    def create(self) -> None:
        """Create the table if missing; safe from several processes at once."""
        with self.engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LEASE_LOCK})
            lease_metadata.create_all(connection, checkfirst=True)
        self._created = True

    def _ensure(self) -> None:
        """The table exists (made once by whichever use comes first)."""
        if not self._created:
            self.create()

    def beat(self, worker: WorkerIdentity, ttl: float) -> None:
        """Renew ``worker``'s lease until ``ttl`` seconds from now (the row is made if missing)."""
        self._ensure()
        with self.engine.begin() as connection:
            now = _now(connection)
            values = {
                "worker_id": worker.worker_id,
                "host": worker.host,
                "pid": worker.pid,
                "process": worker.process,
                "started_at": now,
                "beat_at": now,
                "expires_at": now + ttl,
            }
            insert = (
                postgresql.insert(worker_lease)
                if connection.dialect.name == "postgresql"
                else sqlite.insert(worker_lease)
            )
            renewed = insert.values(values).on_conflict_do_update(
                index_elements=[worker_lease.c.worker_id],
                set_={"beat_at": now, "expires_at": now + ttl},
            )
            connection.execute(renewed)

    def verdicts(self, workers: Collection[str]) -> dict[str, Liveness]:
        """Each named worker's liveness (UNKNOWN: no lease row, e.g. a run of before leases)."""
        found: dict[str, Liveness] = dict.fromkeys(workers, Liveness.UNKNOWN)
        if not found:
            return found
        lease = worker_lease.c
        self._ensure()
        with self.engine.connect() as connection:
            now = _now(connection)
            rows = connection.execute(
                select(lease.worker_id, lease.process, lease.expires_at).where(
                    lease.worker_id.in_(list(found))
                )
            ).all()
        for worker_id, process, expires_at in rows:
            if proven_dead(process):
                found[worker_id] = Liveness.DEAD
            else:
                found[worker_id] = Liveness.EXPIRED if expires_at <= now else Liveness.LIVE
        return found

    def listing(self) -> tuple[float, list[dict[str, Any]]]:
        """Now (the clock leases are judged by) and every lease, newest beat first, with its state.

        The state is the verdict recovery would give: DEAD, EXPIRED or LIVE.
        """
        self._ensure()
        with self.engine.connect() as connection:
            now = _now(connection)
            rows = connection.execute(
                select(worker_lease).order_by(worker_lease.c.beat_at.desc())
            ).mappings()
            found = [dict(row) for row in rows]
        for row in found:
            dead = proven_dead(str(row.pop("process")))
            expired = row["expires_at"] <= now
            row["state"] = (
                Liveness.DEAD if dead else Liveness.EXPIRED if expired else Liveness.LIVE
            ).value
        return now, found

    def prune(self) -> int:
        """Delete the expired leases; returns how many (a worker beating again makes a new one)."""
        self._ensure()
        with self.engine.begin() as connection:
            gone = connection.execute(
                delete(worker_lease).where(worker_lease.c.expires_at <= _now(connection))
            )
            return int(gone.rowcount or 0)


def _now(connection: Connection) -> float:
    """Now in epoch seconds: the server's clock on PostgreSQL, this machine's on SQLite."""
    if connection.dialect.name == "postgresql":
        clock = func.extract("epoch", func.clock_timestamp())
        return float(connection.scalar(select(clock)) or 0.0)
    return time.time()


class Heartbeat:
    """Keeps this process's lease fresh from a thread of its own until closed."""

    def __init__(self, leases: SqlLeases, worker: WorkerIdentity, ttl: float) -> None:
        """Beat ``worker``'s lease every third of ``ttl``."""
        self.leases = leases
        self.worker = worker
        self.ttl = ttl
        self.beats = 0
        """Beats written (a test or a status page can see the lease is being kept)."""
        self.troubled_at = time.monotonic()
        """When a beat last failed (``time.monotonic``; the start until one succeeds)."""
        self.beaten_at: float | None = None
        """When a beat last succeeded (``time.monotonic``; None before the first)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="harness-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        """Create the table, beat once (the lease exists before any run starts), then keep on."""
        try:
            self._beat()
        except SQLAlchemyError as error:
            self.troubled_at = time.monotonic()
            log.warning(
                "recovery: cannot write worker lease %s yet: %s", self.worker.worker_id, error
            )
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self._beat()
            except SQLAlchemyError as error:  # the database is away: beat again next time
                self.troubled_at = time.monotonic()
                log.warning(
                    "recovery: worker lease %s not renewed: %s", self.worker.worker_id, error
                )

    def _beat(self) -> None:
        self.leases.beat(self.worker, self.ttl)
        self.beats += 1
        self.beaten_at = time.monotonic()

    def unsure(self) -> str | None:
        """Why this worker may not take new runs (None: its lease holds with time to spare).

        Once half a TTL has passed since the last beat that was written, other workers may soon
        take the lease for lapsed and end the runs this worker starts.
        """
        if self.beaten_at is None:
            return f"worker {self.worker.worker_id} has not written its lease yet"
        silent = time.monotonic() - self.beaten_at
        if silent > self.ttl / 2:
            return (
                f"worker {self.worker.worker_id} has not renewed its lease for {silent:.0f}s"
                f" (TTL {self.ttl:.0f}s)"
            )
        return None

    def close(self) -> None:
        """Stop beating; the lease expires one TTL after the last beat."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)


def start_heartbeat(settings: Settings, store: HarnessStore, engine: Engine) -> Heartbeat:
    """Give this process a worker id, record it on the runs ``store`` starts, keep its lease."""
    worker = WorkerIdentity.of_this_process()
    store.worker = worker.worker_id
    return Heartbeat(SqlLeases(engine), worker, settings.worker_lease_ttl).start()
