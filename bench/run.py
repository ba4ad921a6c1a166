"""Harness overhead per diagnosis run: ChatService.ask vs bare eventsourcing with the same writes.

Run from the repository root::

    .venv/bin/python bench/run.py [--runs N] [--backend sqlite|postgres|both] [--profile]

For each backend (SQLite files in a fresh temporary directory; PostgreSQL in a fresh schema of
database ``harness_bench``, dropped at the end) it first makes one real diagnosis run: the
offline model over the sample data answering the first sample incident's question (5 tool
calls). A listener on ``store.listeners`` records that run's transaction shape: how many
transactions, which streams each touches, and the stored state size of every event. Then it
measures, per run:

* ``harness``: ``ChatService.ask`` for that question, end to end (routing, agent loop, tool
  boundary with SQL queries over the sample tables, guards, release, termination). The time
  spent inside the ports (``ModelProvider.complete`` of the offline model and ``Tool.run`` of the
  sample-data tools, timed in the thread that runs them) is recorded per run, so the report can
  also show the harness's own overhead: the run minus its port time. That is the figure the
  target is about: what the harness costs around the model and the tools it is given;
* ``floor``: a plain ``eventsourcing`` Application with a minimal Aggregate replaying exactly that
  shape: the same number of transactions, each saving the same number of events of the same
  number of streams, every event padded to the same stored state size; no reads;
* ``floor+get``: the same plus one ``repository.get`` per transaction (every transaction after the
  first rebuilds one stream before appending to it), so the reader can see how much of the
  harness overhead is reads (the harness rereads the run at every boundary, and its tools query
  the SQL sample tables).

Each measurement gets warm-up runs, then its runs are made in 5 rounds interleaved with the other
measurements (rotating order), so background work of the database hits all alike; nothing is
asserted. The target (harness overhead <= 1.5x the floor) is checked on the run minus its port
time; the end-to-end ratio is printed beside it. The last lines are JSON, one object per
measurement, per ratio and per shape.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg import sql
from sqlalchemy import event

# Run as a script (`python bench/X.py`), this folder comes first on sys.path: put the
# repository root before it, so `projections` is the package and `bench` importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from application.ports import JSON, ModelProvider, ModelRequest, ModelResponse, Tool, ToolOutput
from application.store import HarnessStore
from bench.floor import (
    LOCK_TIMEOUT,
    PG_DBNAME,
    PG_HOST,
    PG_PORT,
    PG_USER,
    BareBench,
    Widget,
    ensure_database,
    pg_conninfo,
)
from infrastructure.composition import Services, bootstrap
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings

DEFAULT_RUNS = 300
WARM_UP = 10
ROUNDS = 5
TARGET = 1.5
SESSION = "bench"
MEASUREMENTS = ("harness", "floor", "floor+get")
OVERHEAD = "harness-ports"
"""The derived measurement: each harness run minus the time spent inside its ports."""
PROFILE_LINES = 25


# -- time inside the ports ----------------------------------------------------------------------


class PortTimer:
    """Adds up the seconds spent inside model and tool calls, per harness run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current = 0.0
        self.runs: list[float] = []

    def add(self, seconds: float) -> None:
        """Count one port call (called from the pool thread that made it)."""
        with self._lock:
            self._current += seconds

    def wrap(self, run: Callable[[], object]) -> Callable[[], object]:
        """``run`` that records its port seconds in :attr:`runs`."""

        def timed() -> object:
            with self._lock:
                self._current = 0.0
            result = run()
            with self._lock:
                self.runs.append(self._current)
            return result

        return timed


class TimedProvider:
    """A model provider whose ``complete`` is timed."""

    def __init__(self, inner: ModelProvider, timer: PortTimer) -> None:
        self.name = inner.name
        self.blocking = inner.blocking
        self._inner = inner
        self._timer = timer

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Delegate and time."""
        began = time.perf_counter()
        try:
            return self._inner.complete(request)
        finally:
            self._timer.add(time.perf_counter() - began)


class TimedTool:
    """A tool whose ``run`` is timed; scope normalisation stays harness time."""

    def __init__(self, inner: Tool, timer: PortTimer) -> None:
        self.name = inner.name
        self.description = inner.description
        self.parameters = inner.parameters
        self.read_only = inner.read_only
        self.required_scope = inner.required_scope
        self.max_result_bytes = inner.max_result_bytes
        self.blocking = inner.blocking
        self._inner = inner
        self._timer = timer

    def normalize_scope(self, arguments: JSON) -> str:
        """Delegate (untimed: it is the harness's preflight)."""
        return self._inner.normalize_scope(arguments)

    def run(self, arguments: JSON) -> ToolOutput:
        """Delegate and time."""
        began = time.perf_counter()
        try:
            return self._inner.run(arguments)
        finally:
            self._timer.add(time.perf_counter() - began)


def time_ports(runtime: Services) -> PortTimer:
    """Replace the runtime's provider and tools with timed wrappers."""
    timer = PortTimer()
    service = runtime.chat
    service.provider = TimedProvider(service.provider, timer)
    service.tools = {name: TimedTool(tool, timer) for name, tool in service.tools.items()}
    return timer


# -- the shape of one real run ---------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """One real run's writes and reads.

    ``transactions`` lists, per save, its events as ``(stream index, stored state bytes)``; streams
    are numbered in order of first appearance (0 is the run). The read counts are what the
    harness did besides writing.
    """

    transactions: tuple[tuple[tuple[int, int], ...], ...]
    event_types: tuple[tuple[str, int], ...]
    aggregate_reads: int
    events_read: int
    stream_selects: int
    sql_statements: int
    outcome: str

    @property
    def events(self) -> int:
        """Events appended by one run."""
        return sum(len(tx) for tx in self.transactions)

    @property
    def streams(self) -> int:
        """Aggregates (streams) one run writes to."""
        return len({stream for tx in self.transactions for stream, _ in tx})

    @property
    def state_bytes(self) -> int:
        """Stored state bytes one run appends."""
        return sum(size for tx in self.transactions for _, size in tx)

    def summary(self) -> str:
        """One line for the report."""
        per_tx = Counter(len(tx) for tx in self.transactions)
        spread = ", ".join(f"{n}x{k}" for k, n in sorted(per_tx.items()))
        tools = dict(self.event_types).get("ToolInvocation.ToolInvocationStarted", 0)
        return (
            f"{len(self.transactions)} transactions ({spread} events), {self.events} events on "
            f"{self.streams} streams, {self.state_bytes} bytes of stored state, {tools} tool "
            f"calls; reads: {self.stream_selects} event-stream selects ({self.aggregate_reads} of "
            f"them full rebuilds), {self.events_read} events read, {self.sql_statements} SQL "
            f"statements on the read-side engine; "
            f"outcome {self.outcome}"
        )


@contextmanager
def counting_reads(store: HarnessStore, runtime: Services) -> Iterator[Counter[str]]:
    """Count repository.get calls, events they select and SQL statements of the tools' engine."""
    counts: Counter[str] = Counter()
    get = store.repository.get
    select = store.recorder.select_events

    def counted_get(*args: Any, **kwargs: Any) -> Any:
        counts["gets"] += 1
        return get(*args, **kwargs)

    def counted_select(*args: Any, **kwargs: Any) -> Any:
        selected = select(*args, **kwargs)
        counts["selects"] += 1
        counts["events"] += len(selected)
        return selected

    def on_execute(*_: Any) -> None:
        counts["sql"] += 1

    setattr(store.repository, "get", counted_get)  # noqa: B010 (instance attribute, undone below)
    setattr(store.recorder, "select_events", counted_select)  # noqa: B010
    event.listen(runtime.engine, "before_cursor_execute", on_execute)
    try:
        yield counts
    finally:
        delattr(store.repository, "get")
        delattr(store.recorder, "select_events")
        event.remove(runtime.engine, "before_cursor_execute", on_execute)


def capture_shape(store: HarnessStore, runtime: Services, question: str) -> Shape:
    """Make one real run and record its transactions, event sizes and reads."""
    saves: list[list[tuple[UUID, int, str]]] = []

    def listener(events: Sequence[Any]) -> None:
        saves.append(
            [
                (
                    e.originator_id,
                    len(store.mapper.to_stored_event(e).state),
                    type(e).__qualname__,
                )
                for e in events
            ]
        )

    store.listeners.append(listener)
    try:
        with counting_reads(store, runtime) as counts:
            result = runtime.chat.ask(SESSION, question)
    finally:
        store.listeners.remove(listener)
    streams: dict[UUID, int] = {}
    transactions = tuple(
        tuple((streams.setdefault(oid, len(streams)), size) for oid, size, _ in tx) for tx in saves
    )
    types = Counter(name for tx in saves for _, _, name in tx)
    return Shape(
        transactions,
        tuple(sorted(types.items())),
        counts["gets"],
        counts["events"],
        counts["selects"],
        counts["sql"],
        f"{result.termination.state.value}/{result.release_outcome.value}",
    )


# -- the bare eventsourcing floor ------------------------------------------------------------


Plan = tuple[tuple[tuple[int, str], ...], ...]
"""Per transaction, its events as (stream index, padding)."""


def trigger(streams: list[Widget | None], index: int, data: str) -> Widget:
    """Start stream ``index`` or add an event to it; the widget whose event is pending."""
    widget = streams[index]
    if widget is None:
        widget = streams[index] = Widget.start(data)
    else:
        widget.happen(data)
    return widget


def padded_plan(shape: Shape) -> tuple[Plan, int]:
    """Paddings that give every bare event the real event's stored state size; and the total.

    The sizes are found by a dry run in memory: the bare state size with an empty payload is
    measured per event (versions and topics differ), then the payload is padded by the
    difference (an ASCII character adds one byte of JSON). A real event smaller than an empty
    bare one (about 93 bytes) stays at that minimum, so the floor never stores less.
    """
    app = BareBench(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    streams: list[Widget | None] = [None] * shape.streams
    plan: list[tuple[tuple[int, str], ...]] = []
    for tx in shape.transactions:
        events: list[tuple[int, str]] = []
        for index, size in tx:
            base = len(
                app.mapper.to_stored_event(trigger(streams, index, "").pending_events[-1]).state
            )
            events.append((index, "x" * max(0, size - base)))
        plan.append(tuple(events))
    replica: list[Widget | None] = [None] * shape.streams
    total = 0
    for tx_plan in plan:
        for index, data in tx_plan:
            pending = trigger(replica, index, data).pending_events[-1]
            total += len(app.mapper.to_stored_event(pending).state)
    app.close()
    return tuple(plan), total


class Floor:
    """Replays a run's transaction shape with a bare Application, optionally reading too."""

    def __init__(self, app: BareBench, plan: Plan, *, reads: bool) -> None:
        self.app = app
        self.plan = plan
        self.with_reads = reads
        self.streams = 1 + max(index for tx in plan for index, _ in tx)

    def run(self) -> None:
        """One run's transactions: (get one stream,) trigger the events, save them together."""
        streams: list[Widget | None] = [None] * self.streams
        for tx in self.plan:
            if self.with_reads:
                self.reread(streams, tx[0][0])
            touched: dict[int, Widget] = {}
            for index, data in tx:
                widget = trigger(streams, index, data)
                touched[id(widget)] = widget
            self.app.save(*touched.values())

    @staticmethod
    def reread_index(streams: Sequence[object | None], first: int) -> int | None:
        """The stream to rebuild: the transaction's first if it exists, else 0 if that exists."""
        index = first if streams[first] is not None else 0
        return index if streams[index] is not None else None

    def reread(self, streams: list[Widget | None], first: int) -> None:
        """Rebuild one stream from its stored events and use the rebuilt aggregate."""
        index = self.reread_index(streams, first)
        existing = None if index is None else streams[index]
        if index is not None and existing is not None:
            reloaded: Widget = self.app.repository.get(existing.id)
            streams[index] = reloaded

    def reads(self) -> tuple[int, int]:
        """How many repository.get calls one run with reads makes, and how many events they read."""
        versions: list[int | None] = [None] * self.streams
        gets = events = 0
        for tx in self.plan:
            index = self.reread_index(versions, tx[0][0])
            if index is not None:
                gets += 1
                events += versions[index] or 0
            for stream, _ in tx:
                versions[stream] = (versions[stream] or 0) + 1
        return gets, events

    def close(self) -> None:
        """Release connections."""
        self.app.close()


# -- measuring -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One measurement: the duration of each run, in seconds."""

    backend: str
    name: str
    seconds: tuple[float, ...]

    @property
    def mean_ms(self) -> float:
        """Mean milliseconds per run."""
        return 1000 * sum(self.seconds) / len(self.seconds)

    def percentile_ms(self, p: float) -> float:
        """Nearest-rank percentile in milliseconds."""
        ordered = sorted(self.seconds)
        rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
        return 1000 * ordered[rank - 1]


def timed_runs(run: Callable[[], object], count: int) -> list[float]:
    """Make ``count`` runs; the duration of each."""
    gc.collect()
    durations: list[float] = []
    for _ in range(count):
        began = time.perf_counter()
        run()
        durations.append(time.perf_counter() - began)
    return durations


def measure(
    backend: str, runners: dict[str, Callable[[], object]], runs: int, ports: PortTimer
) -> list[Result]:
    """Warm up every runner, then ``runs`` runs each in interleaved, rotating rounds.

    The harness runner is wrapped by ``ports``; the derived :data:`OVERHEAD` measurement is each
    harness run minus its port seconds.
    """
    for name in MEASUREMENTS:
        timed_runs(runners[name], WARM_UP)
    ports.runs.clear()
    shares = [runs // ROUNDS + (1 if i < runs % ROUNDS else 0) for i in range(ROUNDS)]
    durations: dict[str, list[float]] = {name: [] for name in MEASUREMENTS}
    for index, share in enumerate(shares):
        order = (
            MEASUREMENTS[index % len(MEASUREMENTS) :] + MEASUREMENTS[: index % len(MEASUREMENTS)]
        )
        for name in order:
            durations[name] += timed_runs(runners[name], share)
    results = [Result(backend, name, tuple(durations[name])) for name in MEASUREMENTS]
    if len(ports.runs) != len(durations["harness"]):
        raise RuntimeError("port timings do not match the harness runs")
    overhead = tuple(d - p for d, p in zip(durations["harness"], ports.runs, strict=True))
    results.append(Result(backend, OVERHEAD, overhead))
    for r in results:
        print(f"  {backend:8} {r.name:9} {r.mean_ms:8.2f} ms/run", flush=True)
    return results


def profile_run(backend: str, runtime: Services, question: str) -> None:
    """Profile one harness run and print the top functions by own and by cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    runtime.chat.ask(SESSION, question)
    profiler.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(PROFILE_LINES)
        print(f"\n-- profile of one harness run on {backend}, by {order} --")
        lines = out.getvalue().splitlines()
        start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
        print("\n".join(line for line in lines[max(0, start - 2) :] if line.strip()))


@dataclass(frozen=True)
class BackendReport:
    """What one backend produced."""

    backend: str
    shape: Shape
    floor_state_bytes: int
    floor_reads: tuple[int, int]
    results: list[Result]


def bench_backend(
    backend: str, settings: Settings, bare_env: dict[str, str], runs: int, profile: bool
) -> BackendReport:
    """Sample data, the shape of one real run, then the three measurements on one backend."""
    question = sample_incidents()[0].question
    runtime = bootstrap(settings, create=True, sample=True)  # PostgreSQL: creates the schema
    store = runtime.store
    closers: list[Callable[[], None]] = [runtime.close]
    try:
        runtime.chat.ask(SESSION, question)  # first-use costs stay out of the shape
        shape = capture_shape(store, runtime, question)
        ports = time_ports(runtime)
        plan, floor_bytes = padded_plan(shape)
        floor = Floor(BareBench(env=bare_env), plan, reads=False)
        closers.insert(0, floor.close)
        floor_get = Floor(BareBench(env=bare_env), plan, reads=True)
        closers.insert(0, floor_get.close)
        runners: dict[str, Callable[[], object]] = {
            "harness": ports.wrap(lambda: runtime.chat.ask(SESSION, question)),
            "floor": floor.run,
            "floor+get": floor_get.run,
        }
        results = measure(backend, runners, runs, ports)
        if profile:
            profile_run(backend, runtime, question)
        return BackendReport(backend, shape, floor_bytes, floor_get.reads(), results)
    finally:
        for close in closers:
            close()


def bench_sqlite(runs: int, profile: bool) -> BackendReport:
    """The harness and the floors on their own SQLite files in a fresh temporary directory."""
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        settings = Settings(database_url=f"sqlite:///{tmp}/project.db")
        bare_env = {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": f"{tmp}/bare.db",
            "SQLITE_LOCK_TIMEOUT": LOCK_TIMEOUT,
            "CREATE_TABLE": "y",
        }
        return bench_backend("sqlite", settings, bare_env, runs, profile)


def bench_postgres(runs: int, profile: bool) -> BackendReport:
    """The harness and the floors in a fresh schema that is dropped afterwards."""
    ensure_database()
    schema = f"bench_{uuid4().hex[:12]}"
    settings = Settings(
        database_url=f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_DBNAME}",
        database_schema=schema,
        db_lock_timeout=int(LOCK_TIMEOUT),
    )
    bare_env = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": PG_DBNAME,
        "POSTGRES_HOST": PG_HOST,
        "POSTGRES_PORT": str(PG_PORT),
        "POSTGRES_USER": PG_USER,
        "POSTGRES_PASSWORD": "",
        "POSTGRES_SCHEMA": schema,
        "POSTGRES_LOCK_TIMEOUT": LOCK_TIMEOUT,
        "CREATE_TABLE": "y",
    }
    try:
        return bench_backend("postgres", settings, bare_env, runs, profile)
    finally:
        with psycopg.connect(pg_conninfo(PG_DBNAME), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


# -- report ----------------------------------------------------------------------------------


def ratios(report: BackendReport) -> list[dict[str, Any]]:
    """The harness end to end and its own overhead, each over each floor, by mean and median."""
    by_name = {r.name: r for r in report.results}
    return [
        {
            "backend": report.backend,
            "measure": measure,
            "floor": floor,
            "over_floor_mean": round(by_name[measure].mean_ms / by_name[floor].mean_ms, 3),
            "over_floor_p50": round(
                by_name[measure].percentile_ms(50) / by_name[floor].percentile_ms(50), 3
            ),
            "target": TARGET if (measure, floor) == (OVERHEAD, "floor") else None,
        }
        for measure in (OVERHEAD, "harness")
        for floor in MEASUREMENTS[1:]
    ]


def report(reports: list[BackendReport], runs: int, question: str) -> None:
    """The shape, the aligned table, the ratios, then JSON lines."""
    print()
    print(f"question: {question!r}")
    print(
        f"runs per measurement and backend: {runs} after {WARM_UP} warm-up runs; {ROUNDS} "
        "interleaved rounds"
    )
    for rep in reports:
        print(f"one run on {rep.backend}: {rep.shape.summary()}")
        gets, events = rep.floor_reads
        print(
            f"  floor replays it: {len(rep.shape.transactions)} transactions, {rep.shape.events} "
            f"bare events on {rep.shape.streams} streams, {rep.floor_state_bytes} bytes of stored "
            f"state; floor+get adds {gets} repository.get rebuilding {events} events"
        )
    header = (
        f"{'backend':8}  {'measure':9}  {'runs':>5}  {'mean ms':>8}  {'p50 ms':>8}  {'p95 ms':>8}"
    )
    print(header)
    print("-" * len(header))
    for rep in reports:
        for r in rep.results:
            print(
                f"{r.backend:8}  {r.name:9}  {len(r.seconds):5d}  {r.mean_ms:8.2f}  "
                f"{r.percentile_ms(50):8.2f}  {r.percentile_ms(95):8.2f}"
            )
    print()
    print(f"target: ({OVERHEAD}) / floor <= {TARGET}; the other ratios are context")
    computed = [ratio for rep in reports for ratio in ratios(rep)]
    for ratio in computed:
        verdict = ""
        if ratio["target"] is not None:
            met = ratio["over_floor_mean"] <= ratio["target"]
            verdict = " (meets target)" if met else " (ABOVE target)"
        print(
            f"{ratio['backend']:8}  {ratio['measure'] + '/' + ratio['floor']:23} "
            f"mean {ratio['over_floor_mean']:7.3f}  p50 {ratio['over_floor_p50']:7.3f}{verdict}"
        )
    print()
    for rep in reports:
        shape = {
            "kind": "shape",
            "backend": rep.backend,
            "transactions": len(rep.shape.transactions),
            "events": rep.shape.events,
            "streams": rep.shape.streams,
            "state_bytes": rep.shape.state_bytes,
            "floor_state_bytes": rep.floor_state_bytes,
            "floor_get_reads": rep.floor_reads[0],
            "floor_get_events_read": rep.floor_reads[1],
            "aggregate_reads": rep.shape.aggregate_reads,
            "stream_selects": rep.shape.stream_selects,
            "events_read": rep.shape.events_read,
            "sql_statements": rep.shape.sql_statements,
            "outcome": rep.shape.outcome,
        }
        print(json.dumps(shape))
    for rep in reports:
        for r in rep.results:
            line = {
                "kind": "run",
                "backend": r.backend,
                "measure": r.name,
                "runs": len(r.seconds),
                "mean_ms": round(r.mean_ms, 3),
                "p50_ms": round(r.percentile_ms(50), 3),
                "p95_ms": round(r.percentile_ms(95), 3),
            }
            print(json.dumps(line))
    for ratio in computed:
        print(json.dumps({"kind": "ratio", **ratio}))


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the chosen backends, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per measurement")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile one harness run per backend at the end"
    )
    args = parser.parse_args(argv)
    runs: int = max(ROUNDS, args.runs)
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}; measuring …", flush=True)

    reports: list[BackendReport] = []
    if args.backend in ("sqlite", "both"):
        reports.append(bench_sqlite(runs, args.profile))
    if args.backend in ("postgres", "both"):
        reports.append(bench_postgres(runs, args.profile))
    report(reports, runs, sample_incidents()[0].question)


if __name__ == "__main__":
    main()
