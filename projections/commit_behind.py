"""A batch's end running behind the next read: its last writes and COMMIT in a thread of their own.

While a catch-up applies full batches, the end of a batch (the rows its projections appended,
then COMMIT) does not depend on the next batch's read of the log, which goes through the event
store's own connection; so the runner hands that end to a thread and reads and deserialises the
next batch meanwhile. The writes that end a batch are few long driver calls that let go of the
interpreter's lock (multi-row ``INSERT``s, ``COPY``, ``COMMIT``), so the two threads overlap
instead of taking turns. At most one end runs at a time: the runner waits for it before it
begins the next transaction, reads positions from the database, or returns, and only then tells
its listeners the batch committed. Exactly-once is unchanged: the rows and the tracking move
still commit in the one transaction, and nothing of the next batch is written before it did.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


class CommitBehind:
    """At most one piece of work running in a thread, waited for (and its error raised) later."""

    def __init__(self) -> None:
        """Start with nothing running."""
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._then: Callable[[], None] | None = None

    def start(self, work: Callable[[], None], then: Callable[[], None] | None = None) -> None:
        """Run ``work`` in a thread; ``then`` runs in the waiting thread once it succeeded."""
        self.wait()
        self._then = then
        self._thread = threading.Thread(target=self._run, args=(work,), name="projections-end")
        self._thread.start()

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as error:  # raised again in the thread that waits for it
            self._error = error

    def wait(self) -> None:
        """Wait for the work in flight, if any; raise its error, else run its ``then``."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        thread.join()
        error, self._error = self._error, None
        then, self._then = self._then, None
        if error is not None:
            raise error
        if then is not None:
            then()
