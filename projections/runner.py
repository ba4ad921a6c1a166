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

from typing import TYPE_CHECKING

from infrastructure.database import brief as brief
from infrastructure.read_store import SqlReadStore
from projections.base import Committed, ProjectionStatus, Readers, positioned, shares
from projections.collector import fewer_collections
from projections.commit_behind import CommitBehind
from projections.reach import Reach
from projections.registry import all_projections as all_projections

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Sequence

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from infrastructure.read_store import ReadBatch
    from projections.base import Positioned, Projection, Written
    from projections.local_log import LocalLog

DEFAULT_BATCH = {"sqlite": 4000, "postgresql": 8000}
"""Log entries per batch by database. A SQLite batch holds the one write lock while it writes
(~0.1 s); on PostgreSQL a bigger one spreads its dozen statements' round trips over more events.
Half the size costs a rebuild 4-8 %; a batch holds ~3 MB a thousand entries meanwhile."""


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
        local: LocalLog | None = None,
    ) -> None:
        """Project ``store``'s log into tables on ``engine``, ``batch_size`` entries at a time.

        With ``local``, entries this process appended are taken from there, not read back.
        """
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
        self.reach = Reach(self.positions)
        """Where the projections stand as this process's batches say; waits for a position."""
        self.readers = Readers(self.projections)
        self.local = local
        self._follower = local.join() if local is not None else 0
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
    ) -> tuple[int, dict[str, int] | None, bool]:
        """Apply the batch after ``positions``: the entries read, the positions now, the head.

        The last is whether the read reached the head of the log (as it was then). The positions
        are None when another runner applied the batch first: read them again. With a ``tail``,
        a full batch commits in its thread while the caller reads the next one (the listeners
        hear of it once it did); the caller must wait for it.
        """
        after = min(positions.values())
        read, last, events, reached = self._read(after)
        if not read:
            return 0, positions, reached
        try:
            written, batch = self._apply(positions, events, tail, last)
        except TrackingConflict:
            self.conflicts += 1  # another runner applied (part of) this batch: carry on
            return read, None, reached
        committed = Committed(after, last, written)
        if batch is not None and tail is not None and read == self.batch_size:
            tail.start(batch.finish, lambda: self._committed(committed))
        else:
            if batch is not None:
                batch.finish()
            self._committed(committed)
        return read, {name: max(position, last) for name, position in positions.items()}, reached

    def _committed(self, committed: Committed) -> None:
        """Tell the waiting readers and the listeners that a batch committed."""
        self.reach.note(self.names, committed.last)
        for listener in self.listeners:
            listener(committed)

    def _read(self, after: int) -> tuple[int, int, list[Positioned], bool]:
        """Up to a batch of log entries after position ``after``.

        Returns how many were read, the last one's position, those of them some projection
        reads, deserialised (:class:`~projections.base.Readers`), and whether the read reached
        the head of the log: a short read of the log did, entries taken from :attr:`local`
        never say so (the log may hold another process's entries after them).
        """
        if self.local is not None:
            local, follower = self.local, self._follower
            taken, last, events = local.take(follower, after, self.batch_size, self.readers.wants)
            if taken:
                return taken, last, events, False
        notifications = self.store.recorder.select_notifications(
            start=after + 1, limit=self.batch_size
        )
        if not notifications:
            return 0, after, [], True
        read = self.readers.wanted(notifications)
        events, count = positioned(self.store.mapper, read), len(notifications)
        return count, notifications[-1].id, events, count < self.batch_size

    def _apply(
        self,
        positions: dict[str, int],
        events: list[Positioned],
        tail: CommitBehind | None = None,
        last: int | None = None,
    ) -> tuple[dict[str, Written], ReadBatch | None]:
        """Apply ``events`` to the projections behind, in a transaction the caller ends.

        ``last`` is the position of the last log entry read (default: the last event's); every
        projection behind moves to it. Returns what each projection wrote and the transaction
        to finish (None: nothing left to commit). The previous batch's end (``tail``) must have
        committed before the range is claimed: its tracking move is what the claim checks.
        """
        if tail is not None:
            tail.wait()
        last = events[-1][0] if last is None else last
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
        return self.catch_up_from(None, progress, stop)[0]

    def catch_up_from(
        self,
        positions: dict[str, int] | None,
        progress: Callable[[int], None] | None = None,
        stop: threading.Event | None = None,
        tail: CommitBehind | None = None,
    ) -> tuple[int, dict[str, int] | None]:
        """Catch up from ``positions`` (None: read them); the entries read and the positions now.

        The positions are read from the database when not given and after a lost race; in
        between, each committed batch says where they are. A read of the log shorter than the
        batch size reached its head as it was then: no further read is needed (entries taken
        from this process's own appends never say so: the log is read after them).
        """
        total, tail = 0, tail or CommitBehind()
        with fewer_collections():  # whole batches stay alive until they commit
            try:
                while not (stop and stop.is_set()):
                    if positions is None:
                        tail.wait()
                        positions = self.positions()
                    read, positions, reached = self._step(positions, tail)
                    total += read
                    if read and progress:
                        progress(read)
                    if reached and positions is not None:
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
        self.reach.forget(p.name for p in chosen)
        positions = self.positions() | dict.fromkeys((p.name for p in chosen), 0)
        tail = CommitBehind()  # emptying the tables overlaps reading the first batch
        tail.start(
            lambda: self.read.reset([p.name for p in chosen], [t for p in chosen for t in p.tables])
        )
        return self.catch_up_from(positions, progress, tail=tail)[0]

    # -- waiting for a position -------------------------------------------------------------------

    def wait_for(self, position: int, timeout: float, names: Sequence[str] | None = None) -> bool:
        """Block until the named projections (all by default) have applied ``position``.

        Read-your-writes (:class:`~projections.reach.Reach`): False when ``timeout`` seconds
        passed first.
        """
        return self.reach.wait_for(position, timeout, tuple(names or self.names))
