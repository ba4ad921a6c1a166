"""The ways of reading the log that are measured on one filled store."""

from __future__ import annotations

import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from eventsourcing.postgres import PostgresTrackingRecorder
from eventsourcing.projection import Projection as LibraryProjection
from eventsourcing.projection import ProjectionRunner
from psycopg import sql
from sqlalchemy import update

from application.store import HarnessStore
from bench.common import pg_conninfo
from bench.projections import ES_RUNNER_TIMEOUT
from infrastructure.eventstore import store_environment
from infrastructure.read_tables import metadata, projection_tracking
from projections.collector import fewer_collections
from projections.runner import Projector, all_projections

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking
    from sqlalchemy import Engine

    from bootstrap.composition import Services
    from projections.base import Projection


@dataclass
class Sample:
    """One timed measurement: log entries processed and wall seconds (and per-projection parts)."""

    entries: int
    seconds: float
    parts: dict[str, float] = field(default_factory=dict)
    cpu: float = 0.0
    """This process's CPU seconds (``ours`` and ``ceiling``; a database server's are not in it)."""

    @property
    def rate(self) -> float:
        """Events (log entries) per second."""
        return self.entries / self.seconds


def reset(engine: Engine, projection: Projection) -> None:
    """Empty a projection's tables and move its tracking row back to 0 (what rebuild does first)."""
    with engine.begin() as connection:
        for table in projection.tables:
            connection.execute(metadata.tables[table].delete())
        connection.execute(
            update(projection_tracking)
            .where(projection_tracking.c.name == projection.name)
            .values(position=0)
        )


def prefix_ids(store: HarnessStore, entries: int) -> list[int]:
    """The log ids of the first ``entries`` entries (ids can have holes)."""
    return [n.id for n in store.recorder.select_notifications(start=1, limit=entries)]


class Bench:
    """The measurements on one filled store (the composition root's store and engine)."""

    def __init__(self, services: Services, prefix: int) -> None:
        self.store = store = services.store
        self.engine = engine = services.engine
        self.settings = services.settings
        self.projector = Projector(store, engine)
        self.projector.ensure_tracking()
        self.per_event = [
            Projector(store, engine, projections=[projection], batch_size=1)
            for projection in all_projections()
        ]
        self.prefix_ids = prefix_ids(store, prefix)
        self.prefix = len(self.prefix_ids)
        """Log entries the per-event measurements cover (fewer when the log is shorter)."""

    def ours(self) -> Sample:
        """``Projector.rebuild()`` of every projection, default batch size."""
        began, cpu = time.perf_counter(), time.process_time()
        entries = self.projector.rebuild()
        return Sample(entries, time.perf_counter() - began, cpu=time.process_time() - cpu)

    def ceiling(self) -> Sample:
        """Page through the log and deserialise every entry; write nothing.

        Under the collector thresholds a catch-up runs with (``fewer_collections``): with the
        default ones, collections triggered by a page's decoding made this read 0.19-0.24 s
        instead of a steady 0.19 s, a ceiling lower than reading can reach.
        """
        recorder, mapper = self.store.recorder, self.store.mapper
        began, cpu = time.perf_counter(), time.process_time()
        entries, start = 0, 1
        with fewer_collections():
            while page := recorder.select_notifications(
                start=start, limit=self.projector.batch_size
            ):
                for notification in page:
                    mapper.to_domain_event(notification)
                entries += len(page)
                start = page[-1].id + 1
        return Sample(entries, time.perf_counter() - began, cpu=time.process_time() - cpu)

    def per_event_style(self, entries: int | None = None) -> Sample:
        """One projection per runner, one event per transaction, over the prefix; all of them."""
        count = self.prefix if entries is None else min(entries, self.prefix)
        parts: dict[str, float] = {}
        for runner in self.per_event:
            (projection,) = runner.projections
            reset(self.engine, projection)
            began = time.perf_counter()
            for _ in range(count):
                runner.step()
            parts[projection.name] = time.perf_counter() - began
            if runner.positions()[projection.name] != self.prefix_ids[count - 1]:
                raise RuntimeError(f"{projection.name} did not stop at log entry {count}")
        return Sample(count, sum(parts.values()), parts)

    def es_runner(self) -> Sample:
        """The library's ProjectionRunner with a tracking-only projection, over the prefix."""
        TrackingOnly.clear(self.prefix_ids[-1])
        self._forget_es_runner()
        env = store_environment(self.settings, create_tables=True)
        began = time.perf_counter()
        with ProjectionRunner(
            application_class=HarnessStore,  # the library's runner opens its own, as it would
            projection_class=TrackingOnly,
            view_class=PostgresTrackingRecorder,
            env=env,
        ) as runner:
            deadline = time.monotonic() + ES_RUNNER_TIMEOUT
            while not TrackingOnly.reached.wait(0.05):  # reached_at is taken when it happens
                if runner.is_interrupted.is_set():
                    runner.run_forever(timeout=0)  # re-raises the processing thread's error
                    raise RuntimeError("the eventsourcing ProjectionRunner stopped early")
                if time.monotonic() > deadline:
                    raise TimeoutError("the ProjectionRunner did not reach the prefix")
            seconds = TrackingOnly.reached_at - began
        return Sample(self.prefix, seconds)

    def _forget_es_runner(self) -> None:
        """Delete the tracking-only projection's position, so it starts from the log's start."""
        with (
            psycopg.connect(pg_conninfo(), autocommit=True) as conn,
            suppress(psycopg.errors.UndefinedTable),  # the first runner creates it
        ):
            conn.execute(  # not its '__migration__' row, or it would migrate the table again
                sql.SQL("DELETE FROM {}.{} WHERE application_name = %s").format(
                    sql.Identifier(self.settings.database_schema),
                    sql.Identifier(f"{TrackingOnly.name}_tracking"),
                ),
                (self.store.name,),
            )


class TrackingOnly(LibraryProjection[PostgresTrackingRecorder]):
    """A trivial library projection: records each event's tracking position, nothing else."""

    name = "bench_es_runner"
    target = 0
    reached = threading.Event()
    reached_at = 0.0

    @classmethod
    def clear(cls, target: int) -> None:
        """Arm for a run that ends when ``target`` has been processed."""
        cls.target = target
        cls.reached = threading.Event()
        cls.reached_at = 0.0

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        """One transaction per event: insert the tracking row."""
        self.view.insert_tracking(tracking)
        cls = type(self)
        if tracking.notification_id >= cls.target and not cls.reached.is_set():
            cls.reached_at = time.perf_counter()
            cls.reached.set()
