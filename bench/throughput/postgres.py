"""What PostgreSQL tells about a database under load: lock waits, connections, backend CPU."""

from __future__ import annotations

import threading
import time
from collections import Counter

import psycopg

from bench.common import pg_conninfo
from bench.throughput import SAMPLE_INTERVAL
from bench.throughput.server import cpu_seconds

WAITING = """
SELECT CASE
         WHEN c.relname LIKE '%%\\_events' THEN 'event_table'
         WHEN l.locktype = 'object' AND l.classid = 'pg_database'::regclass THEN 'notify'
         ELSE 'other'
       END, count(*)
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
LEFT JOIN pg_class c ON c.oid = l.relation
WHERE NOT l.granted AND a.datname = %s
GROUP BY 1
"""
"""Backends of the database waiting for a lock, by what they wait on.

``LOCK TABLE`` on eventsourcing's ``*_events`` table is the store's ordering lock; ``NOTIFY``
takes a cluster-wide lock on the notification queue at commit (``PreCommit_Notify``: an
``object`` lock of class ``pg_database``).
"""
BACKENDS = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
CPU_EVERY = 4
"""Read the backends' CPU every this many polls (a backend that exits between loses that much)."""


class LockSampler:
    """Polls PostgreSQL in a thread: lock waits by kind, connections, the backends' CPU.

    The backends' CPU is read from ``/proc`` as they are seen: one present at the start counts
    from its value then, one that appears later from 0; one that exits counts up to its last read.
    The sampler's own backend is left out.
    """

    def __init__(self, database: str) -> None:
        self.database = database
        self.waited: Counter[str] = Counter()
        self.samples = 0
        self.peak_connections = 0
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="lock-sampler", daemon=True)

    def __enter__(self) -> LockSampler:
        self._conn = psycopg.connect(pg_conninfo(self.database), autocommit=True)
        pids = self._pids()
        self.first = cpu_of(pids)
        self.last = dict(self.first)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._read_cpu(self._pids())
        self._conn.close()

    @property
    def backend_cpu(self) -> float:
        """CPU seconds the database's backends spent since the sampler started."""
        return sum(last - self.first.get(pid, 0.0) for pid, last in self.last.items())

    def _pids(self) -> set[int]:
        rows = self._conn.execute(BACKENDS, (self.database,)).fetchall()
        return {int(pid) for (pid,) in rows}

    def _read_cpu(self, pids: set[int]) -> None:
        self.last |= cpu_of(pids)

    def _poll(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(SAMPLE_INTERVAL):
            rows = self._conn.execute(WAITING, (self.database,)).fetchall()
            now = time.perf_counter()
            for kind, count in rows:
                self.waited[kind] += count * (now - last)
            last = now
            self.samples += 1
            if self.samples % CPU_EVERY == 0:
                pids = self._pids()
                self.peak_connections = max(self.peak_connections, len(pids))
                self._read_cpu(pids)


def cpu_of(pids: set[int]) -> dict[int, float]:
    """CPU seconds of each of ``pids`` still running."""
    seconds = {pid: cpu_seconds(pid) for pid in pids}
    return {pid: value for pid, value in seconds.items() if value is not None}
