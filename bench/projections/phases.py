"""One rebuild taken apart (``--phases``): reading the log, each projection, the batches' ends.

It is the product's own :meth:`Projector.rebuild`, with one difference: each batch's end (the
rows the projections appended, then COMMIT) runs at once in the rebuild's thread instead of
behind the next read, so that the parts follow one another and add up to the whole. The parts,
by wall clock: emptying the tables; reading and deserialising the log (what the ceiling
measures, plus picking the entries some projection reads); each projection's ``process``
(building its rows: converting them for the driver, and writing those it reads back); the
appended rows' inserts; the commits; and the rest, the runner's own work (claims, sharing a
batch's events out, the loop). A rebuild at 0.5x the ceiling leaves everything but the reading
as much time as the reading itself: ``beyond reading / ceiling`` is that share, 1.0 at 0.5x.
"""

from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from infrastructure.read_store import ReadBatch, SqlReadStore
from projections.commit_behind import CommitBehind
from projections.runner import Projector, all_projections

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from application.view_port import ViewWriter
    from bench.projections.styles import Bench
    from projections.base import Positioned, Projection, Written

EMPTYING = "emptying the tables"
READING = "reading and decoding the log"
INSERTS = "appended rows inserted"
COMMITS = "commits"
RUNNER = "the runner's own work (the rest)"
ROUNDS = 3
"""Rebuilds in parts (each after a ceiling read): the report gives each part's median."""


class Clock:
    """Seconds spent per named part, summed over the times each was entered."""

    def __init__(self) -> None:
        """Start with nothing timed."""
        self.seconds: dict[str, float] = {}

    @contextmanager
    def timing(self, part: str) -> Iterator[None]:
        """Add the wall time of the block to ``part``."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[part] = self.seconds.get(part, 0.0) + time.perf_counter() - began


def rows_of(name: str) -> str:
    """The part that is projection ``name``'s ``process``."""
    return f"{name} rows"


class _TimedProjection:
    """A projection (the protocol, delegated) whose ``process`` is timed."""

    def __init__(self, inner: Projection, clock: Clock) -> None:
        self.inner = inner
        self.clock = clock
        self.name = inner.name
        self.tables = inner.tables
        self.interests = inner.interests

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        with self.clock.timing(rows_of(self.name)):
            return self.inner.process(view, events)


class _TimedBatch(ReadBatch):
    """A batch whose end is timed in two parts: the appended rows, then the commit."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        super().__init__(engine)
        self.clock = clock

    def finish(self) -> None:
        try:
            with self.clock.timing(INSERTS):
                self.writer.send_appended()
            with self.clock.timing(COMMITS):
                self.transaction.commit()
        finally:
            self.connection.close()


class _TimedReadStore(SqlReadStore):
    def __init__(self, engine: Engine, clock: Clock) -> None:
        super().__init__(engine)
        self.clock = clock

    def begin(self) -> ReadBatch:
        return _TimedBatch(self.engine, self.clock)

    def reset(self, names: Iterable[str], tables: Iterable[str]) -> None:
        with self.clock.timing(EMPTYING):
            super().reset(names, tables)


class _AtOnce(CommitBehind):
    """A batch's end run in the caller's thread when it is handed over, not behind the next read."""

    def start(self, work: Callable[[], None], then: Callable[[], None] | None = None) -> None:
        self.wait()
        work()
        if then is not None:
            then()


class PhasedProjector(Projector):
    """Every projection, rebuilt with each part timed on :attr:`clock`."""

    def __init__(self, store: HarnessStore, engine: Engine) -> None:
        """The read side of ``store`` on ``engine``, as :class:`Projector` makes it."""
        self.clock = Clock()
        timed = [_TimedProjection(p, self.clock) for p in all_projections()]
        super().__init__(store, engine, timed)
        self.read = _TimedReadStore(engine, self.clock)

    def _read(self, after: int) -> tuple[int, int, list[Positioned], bool]:
        with self.clock.timing(READING):
            return super()._read(after)

    def catch_up_from(
        self,
        positions: dict[str, int] | None,
        progress: Callable[[int], None] | None = None,
        stop: threading.Event | None = None,
        tail: CommitBehind | None = None,
    ) -> tuple[int, dict[str, int] | None]:
        """The rebuild's catch-up, after its emptying of the tables, with batch ends at once."""
        if tail is not None:
            tail.wait()
        return super().catch_up_from(positions, progress, stop, _AtOnce())


@dataclass
class Phases:
    """One backend's rebuild in parts: median seconds per part, of the whole, of the ceiling."""

    parts: dict[str, float]
    total: float
    ceiling: float

    @property
    def beyond_reading(self) -> float:
        """Everything but reading the log, over the ceiling (1.0 or less at 0.5x the ceiling)."""
        return (self.total - self.parts[READING]) / self.ceiling


def measure_phases(bench: Bench) -> Phases:
    """:data:`ROUNDS` rebuilds in parts, each after a read of the ceiling; the medians."""
    projector = PhasedProjector(bench.store, bench.engine)
    projector.ensure_tracking()
    projector.rebuild()  # warm-up
    rounds: list[dict[str, float]] = []
    totals: list[float] = []
    ceilings: list[float] = []
    for _ in range(ROUNDS):
        ceilings.append(bench.ceiling().seconds)
        projector.clock.seconds.clear()
        began = time.perf_counter()
        projector.rebuild()
        totals.append(time.perf_counter() - began)
        parts = dict(projector.clock.seconds)
        parts[RUNNER] = totals[-1] - sum(parts.values())
        rounds.append(parts)
    order = [EMPTYING, READING, *(rows_of(p.name) for p in projector.projections)]
    order += [INSERTS, COMMITS, RUNNER]
    return Phases(
        {part: statistics.median(r.get(part, 0.0) for r in rounds) for part in order},
        statistics.median(totals),
        statistics.median(ceilings),
    )
