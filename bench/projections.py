"""Read-side rebuild throughput: our batched Projector vs the raw log and one event per transaction.

Run from the repository root::

    .venv/bin/python bench/projections.py [--runs N] [--repeat N] [--prefix N]
        [--backend sqlite|postgres|both] [--profile]

For each backend (SQLite files in a fresh temporary directory; PostgreSQL in a fresh schema of
database ``harness_bench``, dropped at the end) it fills the event store with realistic events:
``--runs`` runs of ``ChatService.ask`` with the offline model over the sample data, cycling
through the sample incidents' questions (diagnosis runs, about 46 events each), one small-talk and
one knowledge question, six turns per session. Then it measures, in events (log entries) per
second:

* ``ours``: ``Projector.rebuild()`` of all four projections with the default batch size, on the
  whole log (this includes emptying the read tables first, as a rebuild does);
* ``ceiling``: reading and deserialising the notification log only: pages of
  ``store.recorder.select_notifications(start, limit=batch)`` (the Projector's batch size) and
  ``store.mapper.to_domain_event`` for every entry; nothing is written. No projection can rebuild
  faster than this;
* ``per-event``: the library's ``ProjectionRunner`` style: one runner per projection, one
  transaction per event, each committing that event's rows together with its tracking update.
  Implemented as ``Projector(store, engine, projections=[P], batch_size=1)`` for each of the four
  projections in turn (tables and tracking emptied beforehand, untimed), stepped once per log
  entry: every step reads the tracking row and the next log entry, then applies that one event in
  its own transaction. It runs over the first ``--prefix`` log entries only (it is slow); its
  events/s is the prefix's entries divided by the wall time of all four runners together;
* ``es-runner`` (PostgreSQL only, reference): the real ``eventsourcing.projection
  .ProjectionRunner`` with a trivial projection that only records its tracking position, one
  transaction per event, over the same prefix, timed from the runner's construction until it has
  processed the prefix's last entry. It writes no view rows, so it is a lower bound on the cost
  of one library-style projection (the SQLite recorder has no ``subscribe()``).

Each measurement is made ``--repeat`` times in interleaved rounds (rotating order) after one
warm-up round; best and median events/s are reported. Targets (checked on the median, best
printed beside it): ours >= 0.3x the ceiling, and ours >= 10x the per-event style. Nothing is
asserted. ``--profile`` adds a cProfile of one rebuild per backend. The last lines are JSON.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
from eventsourcing.persistence import Tracking
from eventsourcing.postgres import PostgresTrackingRecorder
from eventsourcing.projection import Projection as LibraryProjection
from eventsourcing.projection import ProjectionRunner
from psycopg import sql
from sqlalchemy import Engine, update

# Run as a script (`python bench/X.py`), this folder comes first on sys.path: put the
# repository root before it, so `projections` is the package and `bench` importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from application.store import HarnessStore
from bench.floor import (
    LOCK_TIMEOUT,
    PG_DBNAME,
    PG_HOST,
    PG_PORT,
    PG_USER,
    ensure_database,
    pg_conninfo,
)
from infrastructure.composition import Overrides, bootstrap
from infrastructure.database import create_sql_engine
from infrastructure.eventstore import init_store, store_environment
from infrastructure.ops_data import sample_incidents
from infrastructure.read_tables import metadata, projection_tracking
from infrastructure.settings import Settings
from projections.base import Projection
from projections.runner import Projector, all_projections

DEFAULT_RUNS = 450
"""Runs of ``ask``: with the default question mix, about 15k log entries."""
DEFAULT_REPEAT = 3
DEFAULT_PREFIX = 2000
"""Log entries the per-event measurements cover."""
TURNS_PER_SESSION = 6
SMALL_TALK = "hello"
KNOWLEDGE = "How do I renew an expired TLS certificate?"
OURS, CEILING, PER_EVENT, ES_RUNNER = "ours", "ceiling", "per-event", "es-runner"
MEASUREMENTS = (OURS, CEILING, PER_EVENT, ES_RUNNER)
PER_EVENT_ONE = "per-event/1"
"""Derived from per-event: the rate of one of its runners (one projection) on average."""
TARGETS = ((OURS, CEILING, 0.3), (OURS, PER_EVENT, 10.0))
"""(measure, reference, minimum ratio of their events/s)."""
REFERENCES = ((ES_RUNNER, PER_EVENT_ONE), (OURS, ES_RUNNER), (PER_EVENT, CEILING))
"""Ratios printed as context only."""
PROFILE_LINES = 20
PAGE = 2000
"""Log entries per read when counting the log's streams."""
ES_RUNNER_TIMEOUT = 300.0


def questions() -> list[str]:
    """The question mix, one cycle: every sample incident, then small talk and a knowledge one."""
    return [incident.question for incident in sample_incidents()] + [SMALL_TALK, KNOWLEDGE]


# -- the measurements --------------------------------------------------------------------------


@dataclass
class Sample:
    """One timed measurement: log entries processed and wall seconds (and per-projection parts)."""

    entries: int
    seconds: float
    parts: dict[str, float] = field(default_factory=dict)

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
    """The measurements on one filled store."""

    def __init__(
        self, store: HarnessStore, engine: Engine, settings: Settings, prefix: int
    ) -> None:
        self.store = store
        self.engine = engine
        self.settings = settings
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
        began = time.perf_counter()
        entries = self.projector.rebuild()
        return Sample(entries, time.perf_counter() - began)

    def ceiling(self) -> Sample:
        """Page through the log and deserialise every entry; write nothing."""
        recorder, mapper = self.store.recorder, self.store.mapper
        began = time.perf_counter()
        entries, start = 0, 1
        while page := recorder.select_notifications(start=start, limit=self.projector.batch_size):
            for notification in page:
                mapper.to_domain_event(notification)
            entries += len(page)
            start = page[-1].id + 1
        return Sample(entries, time.perf_counter() - began)

    def per_event_style(self, entries: int | None = None) -> Sample:
        """One projection per runner, one event per transaction, over the prefix; all four."""
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
        with (
            psycopg.connect(pg_conninfo(PG_DBNAME), autocommit=True) as conn,
            suppress(psycopg.errors.UndefinedTable),  # the first runner creates it
        ):
            conn.execute(  # not its '__migration__' row, or it would migrate the table again
                sql.SQL("DELETE FROM {}.{} WHERE application_name = %s").format(
                    sql.Identifier(self.settings.database_schema),
                    sql.Identifier(f"{TrackingOnly.name}_tracking"),
                ),
                (self.store.name,),
            )
        env = store_environment(self.settings, create_tables=True)
        began = time.perf_counter()
        with ProjectionRunner(
            application_class=HarnessStore,
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


# -- one backend -----------------------------------------------------------------------------


@dataclass
class BackendReport:
    """What one backend produced."""

    backend: str
    runs: int
    entries: int
    fill_seconds: float
    outcomes: dict[str, int]
    streams: dict[str, int]
    prefix: int
    batch: int
    samples: dict[str, list[Sample]]

    def rates(self, name: str) -> list[float]:
        """Events/s of every repeat of one measurement (or of the derived per-event/1)."""
        if name == PER_EVENT_ONE:
            return [s.rate * len(s.parts) for s in self.samples.get(PER_EVENT, [])]
        return [s.rate for s in self.samples.get(name, [])]

    def best(self, name: str) -> float:
        """The best events/s."""
        return max(self.rates(name))

    def median(self, name: str) -> float:
        """The median events/s."""
        return statistics.median(self.rates(name))


def fill(settings: Settings, store: HarnessStore, runs: int) -> tuple[float, dict[str, int]]:
    """``runs`` runs of the offline model over the question mix; seconds taken and outcomes."""
    runtime = bootstrap(settings, create=True, sample=True, overrides=Overrides(store=store))
    mix = questions()
    outcomes: Counter[str] = Counter()
    try:
        began = time.perf_counter()
        for index in range(runs):
            session = f"bench-{index // TURNS_PER_SESSION}"
            result = runtime.chat.ask(session, mix[index % len(mix)])
            outcomes[str(result.release_outcome.value)] += 1
        return time.perf_counter() - began, dict(outcomes)
    finally:
        runtime.close()


def log_streams(store: HarnessStore) -> dict[str, int]:
    """Log entries per aggregate class."""
    counts: Counter[str] = Counter()
    start = 1
    while page := store.recorder.select_notifications(start=start, limit=PAGE):
        for notification in page:
            counts[notification.topic.rsplit(":", 1)[-1].split(".")[0]] += 1
        start = page[-1].id + 1
    return dict(counts)


def measure(bench: Bench, backend: str, repeat: int) -> dict[str, list[Sample]]:
    """A warm-up round, then ``repeat`` interleaved rounds in rotating order."""
    runners: dict[str, Callable[[], Sample]] = {
        OURS: bench.ours,
        CEILING: bench.ceiling,
        PER_EVENT: bench.per_event_style,
    }
    if backend == "postgres":
        runners[ES_RUNNER] = bench.es_runner
    names = [name for name in MEASUREMENTS if name in runners]
    bench.ours()
    bench.ceiling()
    bench.per_event_style(entries=100)
    if ES_RUNNER in runners:
        bench.es_runner()  # also creates its tracking table
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for index in range(repeat):
        order = names[index % len(names) :] + names[: index % len(names)]
        for name in order:
            gc.collect()
            sample = runners[name]()
            samples[name].append(sample)
            print(
                f"  {backend:8} round {index + 1}  {name:9} {sample.entries:6d} entries "
                f"{sample.seconds:7.2f} s {sample.rate:9.0f} ev/s",
                flush=True,
            )
    return samples


def profile_rebuild(backend: str, bench: Bench) -> None:
    """cProfile one rebuild; print the top functions by own and by cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    bench.ours()
    profiler.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(PROFILE_LINES)
        print(f"\n-- profile of one Projector.rebuild() on {backend}, by {order} --")
        lines = out.getvalue().splitlines()
        start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
        print("\n".join(line for line in lines[max(0, start - 2) :] if line.strip()))


def bench_backend(
    backend: str, settings: Settings, runs: int, repeat: int, prefix: int, profile: bool
) -> BackendReport:
    """Fill the store, then measure on it."""
    store = init_store(settings)  # PostgreSQL: creates the schema
    engine = create_sql_engine(settings)
    try:
        print(f"  {backend:8} filling the log with {runs} runs …", flush=True)
        fill_seconds, outcomes = fill(settings, store, runs)
        streams = log_streams(store)
        entries = sum(streams.values())
        print(f"  {backend:8} {entries} log entries in {fill_seconds:.1f} s", flush=True)
        bench = Bench(store, engine, settings, prefix)
        samples = measure(bench, backend, repeat)
        if profile:
            profile_rebuild(backend, bench)
        return BackendReport(
            backend,
            runs,
            entries,
            fill_seconds,
            outcomes,
            streams,
            bench.prefix,
            bench.projector.batch_size,
            samples,
        )
    finally:
        engine.dispose()
        store.close()


def bench_sqlite(runs: int, repeat: int, prefix: int, profile: bool) -> BackendReport:
    """On one SQLite file (event store and read tables) in a fresh temporary directory."""
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        settings = Settings(
            database_url=f"sqlite:///{tmp}/project.db", db_lock_timeout=int(LOCK_TIMEOUT)
        )
        return bench_backend("sqlite", settings, runs, repeat, prefix, profile)


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A new schema name in ``harness_bench`` (created by ``init_store``), dropped afterwards."""
    ensure_database()
    schema = f"bench_{uuid4().hex[:12]}"
    try:
        yield schema
    finally:
        with psycopg.connect(pg_conninfo(PG_DBNAME), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def bench_postgres(runs: int, repeat: int, prefix: int, profile: bool) -> BackendReport:
    """In a fresh schema of ``harness_bench``, dropped at the end."""
    with fresh_schema() as schema:
        settings = Settings(
            database_url=f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_DBNAME}",
            database_schema=schema,
            db_lock_timeout=int(LOCK_TIMEOUT),
        )
        return bench_backend("postgres", settings, runs, repeat, prefix, profile)


# -- report ----------------------------------------------------------------------------------


def ratios(rep: BackendReport) -> list[dict[str, Any]]:
    """Targets and context ratios that this backend measured."""
    found: list[dict[str, Any]] = []
    pairs = [(m, r, t) for m, r, t in TARGETS] + [(m, r, None) for m, r in REFERENCES]
    for measure_name, reference, target in pairs:
        if not (rep.rates(measure_name) and rep.rates(reference)):
            continue
        found.append(
            {
                "backend": rep.backend,
                "measure": measure_name,
                "reference": reference,
                "ratio_median": round(rep.median(measure_name) / rep.median(reference), 3),
                "ratio_best": round(rep.best(measure_name) / rep.best(reference), 3),
                "target_min": target,
            }
        )
    return found


DESCRIPTIONS = {
    OURS: "Projector.rebuild(), 4 projections, batch {batch}, whole log (emptying included)",
    CEILING: "select_notifications pages of {batch} + to_domain_event only, whole log",
    PER_EVENT: "4 runners, 1 per projection, 1 event per transaction, log prefix {prefix}",
    PER_EVENT_ONE: "the same per runner: prefix entries x 4 / summed time (one projection)",
    ES_RUNNER: "eventsourcing ProjectionRunner, tracking-only projection, prefix {prefix}",
}
EXPLANATION = """\
  per-event is the library's ProjectionRunner style reproduced with our projections: each of the
  4 projections gets its own Projector(batch_size=1), run after emptying its tables and tracking
  (untimed); every log entry is applied in its own transaction together with its tracking update
  (plus, per entry, a read of the tracking row and a 1-entry log read); its events/s is the
  prefix's entries over the summed wall time of the 4 runners, i.e. the rate at which all four
  read models advance.
  es-runner (context, PostgreSQL only: the SQLite recorder has no subscribe()) is one trivial
  library projection writing only its tracking row; compare it with per-event/1, and remember
  that four real library projections would need four such runners."""


def print_workload(reports: list[BackendReport]) -> None:
    """The question mix, the log each backend got, and what each measurement is."""
    print()
    print(f"question mix per cycle ({TURNS_PER_SESSION} turns per session): {questions()}")
    for rep in reports:
        mix = ", ".join(f"{n} {k}" for k, n in sorted(rep.streams.items()))
        print(
            f"{rep.backend}: {rep.runs} runs filled the log with {rep.entries} entries ({mix}) in "
            f"{rep.fill_seconds:.1f} s; outcomes {rep.outcomes}"
        )
    print()
    print("what is measured (events/s = log entries processed / wall seconds):")
    prefix = "/".join(str(r.prefix) for r in reports)
    batch = "/".join(str(r.batch) for r in reports)
    for name in (*MEASUREMENTS[:3], PER_EVENT_ONE, ES_RUNNER):
        print(f"  {name:13}  {DESCRIPTIONS[name].format(batch=batch, prefix=prefix)}")
    print(EXPLANATION)


def print_table(reports: list[BackendReport]) -> None:
    """The aligned table: best and median events/s per backend and measurement."""
    header = (
        f"{'backend':8}  {'measure':13}  {'entries':>7}  {'repeats':>7}  {'best ev/s':>10}  "
        f"{'median ev/s':>11}  {'median s':>8}"
    )
    print()
    print(header)
    print("-" * len(header))
    for rep in reports:
        for name in (*MEASUREMENTS[:3], PER_EVENT_ONE, ES_RUNNER):
            got = rep.samples.get(PER_EVENT if name == PER_EVENT_ONE else name)
            if not got:
                print(f"{rep.backend:8}  {name:13}  {'n/a':>7}")
                continue
            seconds = statistics.median(s.seconds for s in got)
            print(
                f"{rep.backend:8}  {name:13}  {got[0].entries:7d}  {len(got):7d}  "
                f"{rep.best(name):10.0f}  {rep.median(name):11.0f}  {seconds:8.2f}"
            )
    print()
    print("per-event, by projection (median events/s of that runner alone):")
    for rep in reports:
        per = rep.samples[PER_EVENT]
        parts = ", ".join(
            f"{name} {statistics.median(s.entries / s.parts[name] for s in per):.0f}"
            for name in per[0].parts
        )
        print(f"  {rep.backend:8}  {parts}")


def print_ratios(computed: list[dict[str, Any]]) -> None:
    """Every ratio, with a verdict where it has a target."""
    print()
    print(
        "targets (verdict on the median; best beside it): "
        + "; ".join(f"{m} >= {t}x {r}" for m, r, t in TARGETS)
    )
    for ratio in computed:
        target = ratio["target_min"]
        verdict = "  (context)"
        if target is not None:
            met = "meets target" if ratio["ratio_median"] >= target else "BELOW target"
            verdict = f"  target >= {target}x ({met})"
        print(
            f"{ratio['backend']:8}  {ratio['measure'] + ' / ' + ratio['reference']:27} "
            f"median {ratio['ratio_median']:8.3f}x  best {ratio['ratio_best']:8.3f}x{verdict}"
        )


def print_json(reports: list[BackendReport], computed: list[dict[str, Any]], repeat: int) -> None:
    """One JSON object per backend's log, per measurement and per ratio."""
    print()
    for rep in reports:
        log_line = {
            "kind": "log",
            "backend": rep.backend,
            "runs": rep.runs,
            "entries": rep.entries,
            "streams": rep.streams,
            "outcomes": rep.outcomes,
            "fill_s": round(rep.fill_seconds, 3),
            "per_event_prefix": rep.prefix,
            "batch": rep.batch,
            "repeats": repeat,
        }
        print(json.dumps(log_line))
    for rep in reports:
        for name, got in rep.samples.items():
            line: dict[str, Any] = {
                "kind": "rebuild",
                "backend": rep.backend,
                "measure": name,
                "entries": got[0].entries,
                "best_events_per_s": round(rep.best(name), 1),
                "median_events_per_s": round(rep.median(name), 1),
                "seconds": [round(s.seconds, 4) for s in got],
            }
            if got[0].parts:
                line["parts_seconds"] = [{k: round(v, 4) for k, v in s.parts.items()} for s in got]
            print(json.dumps(line))
    for ratio in computed:
        print(json.dumps({"kind": "ratio", **ratio}))


def report(reports: list[BackendReport], repeat: int) -> None:
    """The workload, the aligned table, the ratios with verdicts, then JSON lines."""
    print_workload(reports)
    print_table(reports)
    computed = [ratio for rep in reports for ratio in ratios(rep)]
    print_ratios(computed)
    print_json(reports, computed, repeat)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the chosen backends, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="ask() runs to fill the log")
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, help="rounds per measure")
    parser.add_argument(
        "--prefix", type=int, default=DEFAULT_PREFIX, help="log entries the per-event styles cover"
    )
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile one rebuild per backend at the end"
    )
    args = parser.parse_args(argv)
    runs: int = max(1, args.runs)
    repeat: int = max(1, args.repeat)
    prefix: int = max(1, args.prefix)
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}; measuring …", flush=True)
    began = time.perf_counter()
    reports: list[BackendReport] = []
    if args.backend in ("sqlite", "both"):
        reports.append(bench_sqlite(runs, repeat, prefix, args.profile))
    if args.backend in ("postgres", "both"):
        reports.append(bench_postgres(runs, repeat, prefix, args.profile))
    report(reports, repeat)
    print(f"\n(total {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
