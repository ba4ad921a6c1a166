"""Runs ended by any process, heard over PostgreSQL LISTEN (the port :class:`RunEnds`).

Every append that ends a run NOTIFYs the ended channel with the run's id in the same
transaction (:mod:`infrastructure.pg_append`), whichever process wrote it: a cancel from the
API or the CLI, a recovery sweep, the run's own worker. A process executing runs listens on that
channel with one connection of its own and remembers the ids of the runs it watches, so a run
about to make a local call learns whether another process ended it without a read of the log
(design.md §17.1).

What a token means: it is the number of the LISTEN connection that was open when the run began
to watch, and the run's read of the log follows it; any end committed after that read is
NOTIFYed to that connection. While that connection lives, :meth:`PgRunEnds.ended` answers from
memory; once it was cut off (or the listener stopped) it answers None, and the run reads the log
again and watches with the new connection's token. An append that ended more runs than a
payload can name (:data:`~infrastructure.pg_append.MANY_ENDED`) makes every token stale.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING
from uuid import UUID

from infrastructure.pg_append import MANY_ENDED
from infrastructure.pg_listen import PgNotifyWake
from infrastructure.pg_recorder import FailFastRecorder

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.store import HarnessStore
    from infrastructure.settings import Settings

log = logging.getLogger(__name__)

APPLICATION_NAME = "harness-run-ends"
"""``application_name`` of the LISTEN connection (find it in ``pg_stat_activity``)."""
STOP_WITHIN_S = 5.0
"""How long :meth:`PgRunEnds.close` waits for the listening thread."""


def hear_run_ends(settings: Settings, store: HarnessStore) -> Callable[[], None] | None:
    """Give ``store`` a started :class:`PgRunEnds` on PostgreSQL; the function that stops it.

    None on SQLite (there a look is a read of a local file) and when ``store`` hears already
    (another :class:`~bootstrap.composition.Services` over the same store).
    """
    recorder = store.recorder
    if not isinstance(recorder, FailFastRecorder) or store.run_ends is not None:
        return None
    ends = PgRunEnds(settings, recorder.append_function.ended_channel).start()
    store.run_ends = ends

    def stop() -> None:
        store.run_ends = None
        ends.close()

    return stop


class PgRunEnds:
    """Hears which watched runs ended, over a LISTEN connection of its own."""

    def __init__(self, settings: Settings, channel: str) -> None:
        """Listen on ``channel`` (the recorder's ended channel) once :meth:`start` is called."""
        self._lock = threading.Condition()
        self._watched: set[UUID] = set()
        self._ended: set[UUID] = set()
        self._stale = 0
        """Raised when an append ended too many runs to name: every earlier token is stale."""
        self.stop = threading.Event()
        self.listener = PgNotifyWake(
            settings, channel, self._woken, self.stop, APPLICATION_NAME, heard=self._heard
        )
        self._thread = threading.Thread(
            target=self.listener.run, name=APPLICATION_NAME, daemon=True
        )

    def start(self) -> PgRunEnds:
        """Start listening in a thread of its own (runs read the log until it listens)."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop listening (the listener is woken to stop now); from now on every run reads."""
        self.listener.interrupt()
        self._thread.join(STOP_WITHIN_S)

    def watch(self, run_id: UUID) -> object | None:
        """Hear of ``run_id``'s end from now on; the token to ask with (None: not listening)."""
        with self._lock:
            self._watched.add(run_id)
            self._ended.discard(run_id)
            return self._token()

    def ended(self, run_id: UUID, token: object) -> bool | None:
        """Whether ``run_id`` was heard ending since ``token``; None: read the log instead."""
        with self._lock:
            if token != self._token() or run_id not in self._watched:
                return None
            return run_id in self._ended

    def forget(self, run_id: UUID) -> None:
        """Stop hearing of ``run_id``."""
        with self._lock:
            self._watched.discard(run_id)
            self._ended.discard(run_id)

    def wait_heard(self, run_id: UUID, timeout: float) -> bool:
        """Wait until ``run_id``'s end was heard (True) or ``timeout`` passed (False)."""
        with self._lock:
            return self._lock.wait_for(lambda: run_id in self._ended, timeout)

    def wait_listening(self, timeout: float, connections: int = 1) -> bool:
        """Wait until the ``connections``-th LISTEN connection is open (True), or ``timeout``."""
        with self._lock:
            return self._lock.wait_for(
                lambda: self._token() is not None and (self.listener.connections >= connections),
                timeout,
            )

    def _token(self) -> object | None:
        """The current LISTEN connection's number and staleness (None: not listening)."""
        if not self.listener.listening.is_set() or not self._thread.is_alive():
            return None
        return (self.listener.connections, self._stale)

    def _heard(self, payload: str) -> None:
        """A NOTIFY of the ended channel: note the watched runs it names."""
        with self._lock:
            if payload == MANY_ENDED:
                self._stale += 1
            for text in payload.split(","):
                try:
                    run_id = UUID(text)
                except ValueError:
                    continue  # not one of ours (anyone may NOTIFY a channel): ignored
                if run_id in self._watched:
                    self._ended.add(run_id)
            self._lock.notify_all()

    def _woken(self) -> None:
        """A (re)connection, a loss or a NOTIFY: let waiters look again."""
        with self._lock:
            self._lock.notify_all()
