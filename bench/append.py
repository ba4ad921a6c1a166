"""Append throughput: raw driver floor vs bare eventsourcing vs this project's HarnessStore.

Run from the repository root::

    .venv/bin/python bench/append.py [--events N] [--backend sqlite|postgres|both]

For each backend (SQLite files in a fresh temporary directory; PostgreSQL in a fresh schema of
database ``harness_bench``, dropped at the end) and each mode it appends the same number of events
with three writers and prints events/s:

* ``raw``: plain ``sqlite3`` / ``psycopg`` inserts into an equivalent table (originator id and
  version, topic, state bytes, auto-assigned id), with the very topic and state bytes this
  project stores for a typical run;
* ``bare-es``: a plain ``eventsourcing`` Application with a minimal Aggregate whose one event type
  carries a payload padded to the project's mean stored state size;
* ``project``: ``HarnessStore.save_all`` with real ``Run`` aggregates and commands.

Modes: ``single`` is one event per transaction; ``batch`` is one transaction per boundary, i.e. 8
events from 2 aggregates (4 each) in one ``save``/``save_all`` (``executemany`` for the floor).

Each writer gets a warm-up pass per mode, then its events are appended in 5 rounds interleaved
with the other writers, so background work of the database hits all writers alike; nothing is
asserted. The last lines are JSON, one object per measurement and per ratio, for the README.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar
from uuid import UUID, uuid4

import psycopg
from psycopg import sql

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
    BareBench,
    Widget,
    ensure_database,
    pg_conninfo,
)
from domain.run import Run
from domain.states import ChatApplicationStatus, Intent, ModelStepPurpose
from domain.tool_states import ToolRejectionCode
from domain.values import Budget
from infrastructure.eventstore import init_store
from infrastructure.settings import Settings

DEFAULT_EVENTS = 15000
BATCH_EVENTS = 8
BATCH_AGGREGATES = 2
EVENTS_PER_STREAM = 40
"""A run (or bare aggregate, or raw stream) gets this many events, then a new one starts."""

TARGET = 0.8
ROUNDS = 5
WRITERS = ("raw", "bare-es", "project")
MODES = {"single": (1, 1), "batch": (BATCH_EVENTS, BATCH_AGGREGATES)}
"""Mode name -> (events per transaction, aggregates per transaction)."""

GENEROUS = Budget(model_calls=10**9, tool_calls=10**9, tokens=10**12, bytes=10**12)
FAR_DEADLINE = datetime.now(UTC) + timedelta(days=3650)

S = TypeVar("S")


# -- the project's workload --------------------------------------------------------------------


def start_run() -> Run:
    """A run with generous limits and a far deadline (``RUN_STARTED`` pending)."""
    return Run.start("bench-session", "why is checkout-api returning 502?", FAR_DEADLINE, GENEROUS)


def run_step(run: Run, index: int) -> None:
    """Trigger the run's event number ``index`` (1-based after RUN_STARTED), like a real run."""
    if index == 1:
        run.change_status(ChatApplicationStatus.ROUTING)
    elif index == 2:
        run.attempt_routing()
    elif index == 3:
        run.record_model_step(ModelStepPurpose.ROUTE, tokens_in=900, tokens_out=40, latency_ms=350)
    elif index == 4:
        run.decide_routing(Intent.DIAGNOSIS)
    elif index == 5:
        run.change_status(ChatApplicationStatus.DIAGNOSIS_RUNNING)
    elif index % 3 == 0:
        run.record_model_step(
            ModelStepPurpose.AGENT, tokens_in=2400, tokens_out=300, latency_ms=1200
        )
    elif index % 3 == 1:
        run.reject_tool_request(
            "shell.exec", ToolRejectionCode.NOT_READ_ONLY, "the tool is not declared read-only"
        )
    else:
        run.change_status(ChatApplicationStatus.DIAGNOSIS_RUNNING)


def sample_run_payloads() -> list[tuple[str, bytes]]:
    """The (topic, state) the project stores for each event of one typical run."""
    store = HarnessStore(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run = start_run()
    for index in range(1, EVENTS_PER_STREAM):
        run_step(run, index)
    stored = [store.mapper.to_stored_event(e) for e in run.collect_events()]
    store.close()
    return [(s.topic, s.state) for s in stored]


# -- the bare eventsourcing workload -----------------------------------------------------------


def bare_padding(target_state_bytes: float) -> str:
    """A payload that makes a bare event's stored state about the project's mean size."""
    app = BareBench(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    widget = Widget.start("")
    for _ in range(1, EVENTS_PER_STREAM):
        widget.happen("")
    sizes = [len(app.mapper.to_stored_event(e).state) for e in widget.collect_events()]
    app.close()
    return "x" * max(0, round(target_state_bytes - sum(sizes) / len(sizes)))


# -- writers -----------------------------------------------------------------------------------


class Writer(ABC, Generic[S]):
    """Makes streams, adds events to them, and saves the pending events of several at once."""

    @abstractmethod
    def start(self) -> S:
        """A new stream with its first event pending."""

    @abstractmethod
    def step(self, stream: S, index: int) -> None:
        """Add the stream's event number ``index`` (pending)."""

    @abstractmethod
    def save(self, streams: list[S]) -> None:
        """Append the pending events of all given streams in one transaction."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""


class ProjectWriter(Writer[Run]):
    """Real Run aggregates saved by ``HarnessStore.save_all``."""

    def __init__(self, store: HarnessStore) -> None:
        self.store = store

    def start(self) -> Run:
        return start_run()

    def step(self, stream: Run, index: int) -> None:
        run_step(stream, index)

    def save(self, streams: list[Run]) -> None:
        self.store.save_all(*streams)

    def close(self) -> None:
        self.store.close()


class BareWriter(Writer[Widget]):
    """Widgets saved by a plain ``Application.save``."""

    def __init__(self, app: BareBench, payload: str) -> None:
        self.app = app
        self.payload = payload

    def start(self) -> Widget:
        return Widget.start(self.payload)

    def step(self, stream: Widget, index: int) -> None:
        stream.happen(self.payload)

    def save(self, streams: list[Widget]) -> None:
        self.app.save(*streams)

    def close(self) -> None:
        self.app.close()


@dataclass
class RawStream:
    """A stream for the raw writers: its id, next version and pending rows."""

    id: UUID = field(default_factory=uuid4)
    pending: list[tuple[Any, int, str, bytes]] = field(default_factory=list)


class RawWriter(Writer[RawStream], ABC):
    """Rows with the project's own topics and state bytes, cycled like a run's events."""

    def __init__(self, payloads: list[tuple[str, bytes]]) -> None:
        self.payloads = payloads

    def start(self) -> RawStream:
        stream = RawStream()
        self.step(stream, 0)
        return stream

    def step(self, stream: RawStream, index: int) -> None:
        topic, state = self.payloads[index % len(self.payloads)]
        stream.pending.append((self.originator_id(stream.id), index + 1, topic, state))

    def rows(self, streams: list[RawStream]) -> list[tuple[Any, int, str, bytes]]:
        """Take the pending rows of the given streams."""
        rows: list[tuple[Any, int, str, bytes]] = []
        for stream in streams:
            rows.extend(stream.pending)
            stream.pending.clear()
        return rows

    @staticmethod
    def originator_id(stream_id: UUID) -> Any:
        """The id as the driver stores it."""
        return stream_id


class RawSQLiteWriter(RawWriter):
    """``sqlite3`` in autocommit mode with explicit BEGIN/COMMIT, WAL, like eventsourcing."""

    def __init__(self, path: str, payloads: list[tuple[str, bytes]]) -> None:
        super().__init__(payloads)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS raw_events ("
            "id INTEGER PRIMARY KEY, originator_id TEXT, originator_version INTEGER, "
            "topic TEXT, state BLOB, UNIQUE (originator_id, originator_version))"
        )
        self.insert = (
            "INSERT INTO raw_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, ?, ?)"
        )

    @staticmethod
    def originator_id(stream_id: UUID) -> Any:
        return stream_id.hex

    def save(self, streams: list[RawStream]) -> None:
        rows = self.rows(streams)
        cursor = self.conn.cursor()
        cursor.execute("BEGIN")
        if len(rows) == 1:
            cursor.execute(self.insert, rows[0])
        else:
            cursor.executemany(self.insert, rows)
        cursor.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class RawPostgresWriter(RawWriter):
    """``psycopg`` 3, one connection, INSERT … RETURNING id in one transaction per save.

    No LOCK TABLE and no NOTIFY: this is the floor, not a copy of eventsourcing's recorder.
    """

    def __init__(self, conninfo: str, schema: str, payloads: list[tuple[str, bytes]]) -> None:
        super().__init__(payloads)
        self.conn = psycopg.connect(conninfo, autocommit=True)
        table = sql.Identifier(schema, "raw_events")
        self.conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} ("
                "originator_id uuid NOT NULL, originator_version bigint NOT NULL, "
                "topic text, state bytea, id bigserial UNIQUE, "
                "PRIMARY KEY (originator_id, originator_version))"
            ).format(table)
        )
        self.insert = sql.SQL(
            "INSERT INTO {} (originator_id, originator_version, topic, state) "
            "VALUES (%s, %s, %s, %s) RETURNING id"
        ).format(table)

    def save(self, streams: list[RawStream]) -> None:
        rows = self.rows(streams)
        with self.conn.transaction(), self.conn.cursor() as cursor:
            if len(rows) == 1:
                cursor.execute(self.insert, rows[0], prepare=True)
                cursor.fetchone()
            else:
                cursor.executemany(self.insert, rows, returning=True)
                while cursor.nextset():
                    pass

    def close(self) -> None:
        self.conn.close()


# -- the driver --------------------------------------------------------------------------------


def drive(writer: Writer[S], events: int, per_tx: int, aggregates: int) -> float:
    """Append ``events`` events, ``per_tx`` per transaction from ``aggregates`` streams; seconds."""
    slots: list[S | None] = [None] * aggregates
    counts = [0] * aggregates
    gc.collect()
    done = 0
    began = time.perf_counter()
    while done < events:
        n = min(per_tx, events - done)
        batch: list[S] = []
        for j in range(n):
            slot = j % aggregates
            stream = slots[slot]
            if stream is None or counts[slot] >= EVENTS_PER_STREAM:
                stream = slots[slot] = writer.start()
                counts[slot] = 1
            else:
                writer.step(stream, counts[slot])
                counts[slot] += 1
            if not any(s is stream for s in batch):
                batch.append(stream)
        writer.save(batch)
        done += n
    return time.perf_counter() - began


@dataclass(frozen=True)
class Result:
    """One measurement: the events of all rounds and their summed time."""

    backend: str
    mode: str
    writer: str
    events: int
    seconds: float
    round_rates: tuple[float, ...]

    @property
    def rate(self) -> float:
        """Events per second."""
        return self.events / self.seconds


def measure(backend: str, writers: dict[str, Writer[Any]], events: int) -> list[Result]:
    """Every mode for every writer of one backend.

    Each writer gets a warm-up pass, then its ``events`` are appended in ``ROUNDS`` rounds that
    interleave the writers (in a rotating order), so a checkpoint or autovacuum hits all alike.
    """
    results: list[Result] = []
    warm_up = max(BATCH_EVENTS * 10, events // 10)
    shares = [events // ROUNDS + (1 if i < events % ROUNDS else 0) for i in range(ROUNDS)]
    for mode, (per_tx, aggregates) in MODES.items():
        for name in WRITERS:
            drive(writers[name], warm_up, per_tx, aggregates)
        timings: dict[str, list[float]] = {name: [] for name in WRITERS}
        for index, share in enumerate(shares):
            order = WRITERS[index % len(WRITERS) :] + WRITERS[: index % len(WRITERS)]
            for name in order:
                timings[name].append(drive(writers[name], share, per_tx, aggregates))
        for name in WRITERS:
            rates = tuple(n / t for n, t in zip(shares, timings[name], strict=True))
            result = Result(backend, mode, name, events, sum(timings[name]), rates)
            results.append(result)
            print(f"  {backend:8} {mode:6} {name:8} {result.rate:10.0f} events/s", flush=True)
    return results


# -- backends ----------------------------------------------------------------------------------


def bench_sqlite(events: int, payloads: list[tuple[str, bytes]], padding: str) -> list[Result]:
    """Three writers, each on its own SQLite file in a fresh temporary directory."""
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        store = init_store(Settings(database_url=f"sqlite:///{tmp}/project.db"))
        bare = BareBench(
            env={
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": f"{tmp}/bare.db",
                "SQLITE_LOCK_TIMEOUT": LOCK_TIMEOUT,
                "CREATE_TABLE": "y",
            }
        )
        writers: dict[str, Writer[Any]] = {
            "raw": RawSQLiteWriter(f"{tmp}/raw.db", payloads),
            "bare-es": BareWriter(bare, padding),
            "project": ProjectWriter(store),
        }
        try:
            return measure("sqlite", writers, events)
        finally:
            for writer in writers.values():
                writer.close()


def bench_postgres(events: int, payloads: list[tuple[str, bytes]], padding: str) -> list[Result]:
    """Three writers, each with its own table in a fresh schema that is dropped afterwards."""
    ensure_database()
    schema = f"bench_{uuid4().hex[:12]}"
    settings = Settings(
        database_url=f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_DBNAME}",
        database_schema=schema,
        db_lock_timeout=int(LOCK_TIMEOUT),
    )
    writers: dict[str, Writer[Any]] = {}
    try:
        writers["project"] = ProjectWriter(init_store(settings))  # creates the schema
        bare = BareBench(
            env={
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
        )
        writers["bare-es"] = BareWriter(bare, padding)
        writers["raw"] = RawPostgresWriter(pg_conninfo(PG_DBNAME), schema, payloads)
        return measure("postgres", writers, events)
    finally:
        for writer in writers.values():
            writer.close()
        with psycopg.connect(pg_conninfo(PG_DBNAME), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


# -- report ------------------------------------------------------------------------------------


def ratios(results: list[Result]) -> list[dict[str, Any]]:
    """Project / bare eventsourcing and project / raw, per backend and mode."""
    rates = {(r.backend, r.mode, r.writer): r.rate for r in results}
    out: list[dict[str, Any]] = []
    for backend, mode in dict.fromkeys((r.backend, r.mode) for r in results):
        project = rates[(backend, mode, "project")]
        out.append(
            {
                "backend": backend,
                "mode": mode,
                "project_over_bare": round(project / rates[(backend, mode, "bare-es")], 3),
                "project_over_raw": round(project / rates[(backend, mode, "raw")], 3),
                "target_project_over_bare": TARGET,
            }
        )
    return out


def report(results: list[Result], mean_state: float, events: int) -> None:
    """The aligned table, the ratios, then JSON lines."""
    print()
    print(
        f"events per writer and mode: {events}; batch = {BATCH_EVENTS} events from "
        f"{BATCH_AGGREGATES} aggregates per transaction; {ROUNDS} interleaved rounds; "
        f"mean stored state {mean_state:.0f} bytes"
    )
    header = (
        f"{'backend':8}  {'mode':6}  {'writer':8}  {'events':>7}  {'seconds':>8}  "
        f"{'events/s':>9}  {'rounds min-max':>15}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.backend:8}  {r.mode:6}  {r.writer:8}  {r.events:7d}  "
            f"{r.seconds:8.3f}  {r.rate:9.0f}  "
            f"{min(r.round_rates):7.0f}-{max(r.round_rates):<7.0f}".rstrip()
        )
    if any(r.backend == "postgres" for r in results):
        print(
            "postgres: raw has no LOCK TABLE/NOTIFY; project runs with store_environment() "
            "(HARNESS_DB_PRE_PING off by default), bare-es with eventsourcing's defaults"
        )
    print()
    print(f"target: project / bare eventsourcing >= {TARGET}")
    computed = ratios(results)
    for ratio in computed:
        verdict = "meets" if ratio["project_over_bare"] >= TARGET else "BELOW"
        print(
            f"{ratio['backend']:8}  {ratio['mode']:6}  "
            f"project/bare-es {ratio['project_over_bare']:.3f} ({verdict} target)  "
            f"project/raw {ratio['project_over_raw']:.3f}"
        )
    print()
    for r in results:
        line = {
            "kind": "append",
            "backend": r.backend,
            "mode": r.mode,
            "writer": r.writer,
            "events": r.events,
            "seconds": round(r.seconds, 4),
            "events_per_s": round(r.rate, 1),
            "round_min_events_per_s": round(min(r.round_rates), 1),
            "round_max_events_per_s": round(max(r.round_rates), 1),
        }
        print(json.dumps(line))
    for ratio in computed:
        print(json.dumps({"kind": "ratio", **ratio}))


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the chosen backends, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="events per writer")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    args = parser.parse_args(argv)
    events: int = max(BATCH_EVENTS, args.events)

    payloads = sample_run_payloads()
    mean_state = sum(len(state) for _, state in payloads) / len(payloads)
    padding = bare_padding(mean_state)
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}; measuring …", flush=True)

    results: list[Result] = []
    if args.backend in ("sqlite", "both"):
        results += bench_sqlite(events, payloads, padding)
    if args.backend in ("postgres", "both"):
        results += bench_postgres(events, payloads, padding)
    report(results, mean_state, events)


if __name__ == "__main__":
    main()
