"""Driving the writers: warm-up, interleaved rounds per mode, one fresh place per backend."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Any, TypeVar

from bench.append import BATCH_EVENTS, EVENTS_PER_STREAM, MODES, ROUNDS, WRITERS
from bench.append.writers import (
    BareWriter,
    ProjectWriter,
    RawPostgresWriter,
    RawSQLiteWriter,
    RawWriter,
    Writer,
)
from bench.common import Place, interleaved, pg_conninfo, place, shares
from bench.floor import BareBench, BareOneTrip
from bootstrap.composition import bootstrap
from infrastructure import pg_recorder

S = TypeVar("S")


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
    rounds = shares(events, ROUNDS)
    names = tuple(name for name in WRITERS if name in writers)
    for mode, (per_tx, aggregates) in MODES.items():
        for name in names:
            drive(writers[name], warm_up, per_tx, aggregates)
        timings: dict[str, list[float]] = {name: [] for name in names}
        for _, name, share in interleaved(names, rounds):
            timings[name].append(drive(writers[name], share, per_tx, aggregates))
        for name in names:
            rates = tuple(n / t for n, t in zip(rounds, timings[name], strict=True))
            result = Result(backend, mode, name, events, sum(timings[name]), rates)
            results.append(result)
            print(f"  {backend:8} {mode:6} {name:8} {result.rate:10.0f} events/s", flush=True)
    return results


def raw_writer(where: Place, payloads: list[tuple[str, bytes]]) -> RawWriter:
    """The raw floor beside the project's tables: its own SQLite file, or a table in the schema."""
    if where.backend == "sqlite":
        return RawSQLiteWriter(f"{where.directory}/raw.db", payloads)
    return RawPostgresWriter(pg_conninfo(), where.schema, payloads)


def bench_backend(
    backend: str, events: int, payloads: list[tuple[str, bytes]], padding: str
) -> list[Result]:
    """The three writers in a fresh place: each its own SQLite file, or its own table."""
    writers: dict[str, Writer[Any]] = {}
    with place(backend) as where:
        try:  # the project's store first: on PostgreSQL it creates the schema
            writers["project"] = ProjectWriter(bootstrap(where.settings, create=True))
            writers["bare-es"] = BareWriter(BareBench(env=where.bare_env), padding)
            if backend == "postgres":
                ours = where.bare_env | {"APPLICATION_RECORDER_TOPIC": pg_recorder.TOPIC}
                writers["bare-1rt"] = BareWriter(BareOneTrip(env=ours), padding)
            writers["raw"] = raw_writer(where, payloads)
            return measure(backend, writers, events)
        finally:
            for writer in writers.values():
                writer.close()
