"""Runs the projections over the log: batched, exactly-once, live, rebuildable.

One batch reads up to ``batch_size`` notifications after the slowest projection's position,
deserialises them once, and hands each projection the events it has not applied yet. Every
projection writes its rows and moves its tracking row in the same transaction; the tracking update
is conditional on the position it started from, so two runners of the same projection (a
restarted process, a rebuild racing the live follower) never apply a batch twice: the loser's
transaction rolls back and it continues from the winner's position. While catching up, a full
batch's end (its last writes and COMMIT) runs behind the next read (``commit_behind``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from eventsourcing.persistence import PersistenceError
from sqlalchemy.exc import SQLAlchemyError

from infrastructure.database import brief as brief
from infrastructure.read_store import SqlReadStore
from projections.base import Committed, ProjectionStatus, UnreadableLogEntry, positioned, shares
from projections.collector import fewer_collections
from projections.commit_behind import CommitBehind
from projections.registry import all_projections as all_projections

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from infrastructure.read_store import ReadBatch
    from projections.base import Positioned, Projection, Written

log = logging.getLogger(__name__)

DEFAULT_BATCH = {"sqlite": 4000, "postgresql": 8000}
"""Log entries per batch by database. A SQLite batch holds the one write lock while it writes
(~0.1 s); on PostgreSQL a bigger one spreads its dozen statements' round trips over more events.
Half the size costs a rebuild 4-8 %; a batch holds ~3 MB a thousand entries meanwhile."""
POLL_INTERVAL = 1.0
"""Seconds between polls of the log when no wake-up came (a lost NOTIFY, another process)."""
RETRY_AFTER = 1.0
"""Seconds before a follower retries after the database failed (or an unreadable entry)."""


class TrackingConflict(Exception):
    """Another runner moved a projection's position first; this batch was rolled back."""


class Projector:
    """Applies the log to the projections' tables; safe to run in several threads or processes."""

    def __init__(
        self,
        store: HarnessStore,
        engine: Engine,
        projections: Sequence[Projection] | None = None,
        batch_size: int | None = None,
        notify_channel: str | None = None,
    ) -> None:
        """Project ``store``'s log into tables on ``engine``, ``batch_size`` entries at a time."""
        self.store = store
        self.engine = engine
        self.read = SqlReadStore(engine)
        """The read tables and their tracking rows; its transactions are the batches' writers."""
        self.projections = tuple(projections or all_projections())
        self.batch_size = batch_size or DEFAULT_BATCH.get(engine.dialect.name, 4000)
        self.notify_channel = notify_channel
        """PostgreSQL: a channel NOTIFYed with the position of every committed batch, so other
        processes (the service workers' feeds) learn at once that the read tables advanced."""
        self.listeners: list[Callable[[Committed], None]] = []
        """Called after every committed batch with what it applied and wrote (in the projector's
        thread)."""
        self.advanced = threading.Condition()
        """Notified after every committed batch (in-process readers waiting for a position)."""
        self.conflicts = 0
        self._tracked = False

    @property
    def names(self) -> tuple[str, ...]:
        """The projections' names."""
        return tuple(p.name for p in self.projections)

    # -- positions -------------------------------------------------------------------------------

    def ensure_tracking(self) -> None:
        """Create the read tables and a tracking row (position 0) per projection, once."""
        if not self._tracked:
            self.read.ensure_tracking(self.names)
            self._tracked = True

    def positions(self) -> dict[str, int]:
        """Each projection's last applied log position."""
        self.ensure_tracking()
        stored = self.read.positions()
        if set(self.names) - set(stored):  # the read tables were recreated meanwhile
            self._tracked = False
            self.ensure_tracking()
            stored = self.read.positions()
        return {name: stored.get(name, 0) for name in self.names}

    def status(self) -> list[ProjectionStatus]:
        """Position, head and lag of every projection."""
        head = self.store.head()
        return [ProjectionStatus(n, p, head) for n, p in self.positions().items()]

    # -- applying the log ------------------------------------------------------------------------

    def step(self) -> int:
        """Apply one batch; the number of log entries read (0: every projection is caught up)."""
        return self._step(self.positions())[0]

    def _step(
        self, positions: dict[str, int], tail: CommitBehind | None = None
    ) -> tuple[int, dict[str, int] | None]:
        """Apply the batch after ``positions``; the entries read and the positions now.

        The positions are None when another runner applied the batch first: read them again.
        With a ``tail``, a full batch commits in its thread while the caller reads the next one
        (the listeners hear of it once it did); the caller must wait for it.
        """
        events = self._read(min(positions.values()))
        if not events:
            return 0, positions
        after, last = min(positions.values()), events[-1][0]
        try:
            written, batch = self._apply(positions, events, tail)
        except TrackingConflict:
            self.conflicts += 1  # another runner applied (part of) this batch: carry on
            return len(events), None
        committed = Committed(after, last, written)
        if batch is not None and tail is not None and len(events) == self.batch_size:
            tail.start(batch.finish, lambda: self._committed(committed))
        else:
            if batch is not None:
                batch.finish()
            self._committed(committed)
        return len(events), {name: max(position, last) for name, position in positions.items()}

    def _committed(self, committed: Committed) -> None:
        """Tell the waiting readers and the listeners that a batch committed."""
        with self.advanced:
            self.advanced.notify_all()
        for listener in self.listeners:
            listener(committed)

    def _read(self, after: int) -> list[Positioned]:
        """Up to a batch of log entries after position ``after``, deserialised."""
        notifications = self.store.recorder.select_notifications(
            start=after + 1, limit=self.batch_size
        )
        return positioned(self.store.mapper, notifications)

    def _apply(
        self, positions: dict[str, int], events: list[Positioned], tail: CommitBehind | None = None
    ) -> tuple[dict[str, Written], ReadBatch | None]:
        """Apply ``events`` to the projections behind, in a transaction the caller ends.

        Returns what each projection wrote and the transaction to finish (None: nothing left
        to commit). The previous batch's end (``tail``) must have committed before the range
        is claimed: its tracking move is what the claim checks.
        """
        if tail is not None:
            tail.wait()
        last = events[-1][0]
        behind = [p for p in self.projections if positions[p.name] < last]
        if not behind:
            return {}, None
        # Claim the range before writing, all projections in one statement: a runner that lost
        # the race stops here (on PostgreSQL the row locks make it wait for the winner's commit
        # first, then it finds the positions moved).
        claims = {p.name: positions[p.name] for p in behind}
        work = [(p, mine) for p, mine in shares(behind, positions, events) if mine]
        if not work:  # nothing to write: the claim alone, a statement committed on its own
            if not self.read.claim(claims, last, self.notify_channel):
                raise TrackingConflict(", ".join(claims))
            return {}, None
        batch = self.read.begin()
        try:
            if not batch.writer.advance(claims, last, self.notify_channel):
                raise TrackingConflict(", ".join(claims))
            view = batch.writer
            return {p.name: p.process(view, mine) for p, mine in work}, batch
        except BaseException:
            batch.abandon()
            raise

    def catch_up(
        self,
        progress: Callable[[int], None] | None = None,
        stop: threading.Event | None = None,
    ) -> int:
        """Apply batches until all projections reach the head (or ``stop`` is set); entries read."""
        return self._catch_up(None, progress, stop)[0]

    def _catch_up(
        self,
        positions: dict[str, int] | None,
        progress: Callable[[int], None] | None = None,
        stop: threading.Event | None = None,
        tail: CommitBehind | None = None,
    ) -> tuple[int, dict[str, int] | None]:
        """Catch up from ``positions`` (None: read them); the entries read and the positions now.

        The positions are read from the database when not given and after a lost race; in
        between, each committed batch says where they are. A committed batch shorter than the
        batch size reached the head of the log as it was read: no further read is needed.
        """
        total, tail = 0, tail or CommitBehind()
        with fewer_collections():  # whole batches stay alive until they commit
            try:
                while not (stop and stop.is_set()):
                    if positions is None:
                        tail.wait()
                        positions = self.positions()
                    read, positions = self._step(positions, tail)
                    total += read
                    if read and progress:
                        progress(read)
                    if read < self.batch_size and positions is not None:
                        break  # (after a lost race: read the positions again and go on)
            finally:
                tail.wait()
        return total, positions

    def rebuild(
        self, names: Sequence[str] | None = None, progress: Callable[[int], None] | None = None
    ) -> int:
        """Empty the named projections (all by default) and apply the log again from position 0."""
        chosen = [p for p in self.projections if names is None or p.name in names]
        unknown = set(names or ()) - {p.name for p in chosen}
        if unknown:
            raise ValueError(
                f"unknown projection {', '.join(sorted(unknown))}; known: {', '.join(self.names)}"
            )
        self.ensure_tracking()
        positions = self.positions() | dict.fromkeys((p.name for p in chosen), 0)
        tail = CommitBehind()  # emptying the tables overlaps reading the first batch
        tail.start(
            lambda: self.read.reset([p.name for p in chosen], [t for p in chosen for t in p.tables])
        )
        return self._catch_up(positions, progress, tail=tail)[0]

    # -- following the log live -------------------------------------------------------------------

    def wait_for(self, position: int, timeout: float, names: Sequence[str] | None = None) -> bool:
        """Block until the named projections (all by default) have applied ``position``.

        Read-your-writes: a command returns its log position, a query waits for it here. Returns
        False when ``timeout`` seconds passed first. Wakes on this process's batches and polls the
        tracking table for a projector running elsewhere.
        """
        wanted = tuple(names or self.names)
        deadline = time.monotonic() + timeout
        while True:
            reached = self.positions()
            if all(reached[n] >= position for n in wanted):
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self.advanced:
                self.advanced.wait(min(remaining, 0.05))

    def follow(
        self, stop: threading.Event, wake: threading.Event, poll_interval: float = POLL_INTERVAL
    ) -> None:
        """Catch up, then again on every wake-up or poll tick, until ``stop`` is set.

        Set ``wake`` after ``stop`` to end the wait at once.

        The positions are carried from one wake-up to the next (read again after a lost race,
        which is how a rebuild or another runner is noticed). A database failure (or an entry that
        is not an event) is logged and retried after :data:`RETRY_AFTER` from the positions in the
        database, so nothing is lost or applied twice across a failure.
        """
        positions: dict[str, int] | None = None
        said = ""  # an entry that is not an event is said once, then retried quietly
        while not stop.is_set():
            wake.clear()
            try:
                positions = self._catch_up(positions, stop=stop)[1]
            except (SQLAlchemyError, PersistenceError, OSError, UnreadableLogEntry) as error:
                if not isinstance(error, UnreadableLogEntry):
                    log.warning("projections: %s; retrying in %.1fs", brief(error), RETRY_AFTER)
                elif str(error) != said:
                    log.error("projections: %s", said := str(error))
                positions = None
                stop.wait(RETRY_AFTER)
                continue
            except Exception:  # supervised: a bug is logged loudly, the follower keeps trying
                log.exception("projections: a batch failed; retrying in %.1fs", RETRY_AFTER)
                positions = None
                stop.wait(RETRY_AFTER)
                continue
            wake.wait(poll_interval)
