"""The next batch's log entries, fetched in a thread while the current batch is applied.

On PostgreSQL most of a batch's read is waiting: for the server to find and send the rows, time
in which the driver lets go of the interpreter's lock. While catching up, the runner knows where
the next batch starts as soon as it has the current one's entries (after the last of them), so a
thread fetches it meanwhile and the runner takes the rows when it gets there. Only fetching runs
ahead: the rows are deserialised, applied and committed in order by the runner as before, so
nothing about exactly-once changes. A fetch for a position the runner no longer wants (another
runner won the batch and the positions were read again) is dropped; a fetch that failed raises
in the runner when it takes the rows, as its own read would have.

On SQLite the driver takes the lock back for every row it builds, so a second thread costs more
than it hides; the runner reads there in its own thread.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


class ReadAhead:
    """At most one fetch of the log in flight, for the position after ``after``."""

    def __init__(self, fetch: Callable[[int], Sequence[Any]], batch_size: int) -> None:
        """``fetch(after)`` reads the batch (``batch_size`` entries) after position ``after``."""
        self._fetch = fetch
        self.batch_size = batch_size
        self._thread: threading.Thread | None = None
        self._after = -1
        self._rows: Sequence[Any] = ()
        self._error: BaseException | None = None

    def read(self, after: int) -> Sequence[Any]:
        """The batch after ``after``, fetched ahead or now; after a full one, fetch the next."""
        rows = self.take(after)
        if rows is None:
            rows = self._fetch(after)
        if len(rows) == self.batch_size:
            self.start(rows[-1].id)
        return rows

    def start(self, after: int) -> None:
        """Fetch the entries after ``after`` in a thread (dropping any fetch in flight)."""
        self.drop()
        self._after = after
        self._thread = threading.Thread(target=self._run, name="projections-read-ahead")
        self._thread.start()

    def _run(self) -> None:
        try:
            self._rows = self._fetch(self._after)
        except BaseException as error:  # raised in the runner, if it still wants these rows
            self._error = error

    def take(self, after: int) -> Sequence[Any] | None:
        """The entries after ``after`` if that is what was fetched (None: fetch them yourself).

        Waits for the fetch in flight; raises its error when it failed for that position.
        """
        if self._thread is None:
            return None
        wanted = self._after == after
        rows, error = self._finish()
        if not wanted:
            return None
        if error is not None:
            raise error
        return rows

    def drop(self) -> None:
        """Wait for the fetch in flight, if any, and forget it (and any error it had)."""
        if self._thread is not None:
            self._finish()

    def _finish(self) -> tuple[Sequence[Any], BaseException | None]:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        rows, error = self._rows, self._error
        self._rows, self._error, self._after = (), None, -1
        return rows, error
