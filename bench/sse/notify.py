"""The reference: a raw PostgreSQL NOTIFY round trip, from the send to a listening thread."""

from __future__ import annotations

import queue
import threading
import time

import psycopg
from psycopg import sql

from bench.common import pg_conninfo
from bench.sse import NOTIFY_TIMEOUT


class NotifyProbe:
    """One connection LISTENs in its own thread; another sends NOTIFY; round trips in seconds."""

    def __init__(self, channel: str) -> None:
        self.channel = sql.Identifier(channel)
        self._listen = psycopg.connect(pg_conninfo(), autocommit=True)
        self._listen.execute(sql.SQL("LISTEN {}").format(self.channel))
        self._send = psycopg.connect(pg_conninfo(), autocommit=True)
        self._arrived: queue.Queue[tuple[str, float]] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-listen", daemon=True)
        self._thread.start()
        self._sent = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            for notify in self._listen.notifies(timeout=0.2):
                self._arrived.put((notify.payload, time.perf_counter()))

    def round_trip(self) -> float:
        """Seconds from just before a NOTIFY is sent until the listening thread has it."""
        self._sent += 1
        payload = str(self._sent)
        began = time.perf_counter()
        self._send.execute(sql.SQL("NOTIFY {}, {}").format(self.channel, sql.Literal(payload)))
        got, arrived = self._arrived.get(timeout=NOTIFY_TIMEOUT)
        if got != payload:
            raise RuntimeError(f"NOTIFY probe: expected payload {payload}, got {got}")
        return arrived - began

    def close(self) -> None:
        """Stop listening and close both connections."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._listen.close()
        self._send.close()
