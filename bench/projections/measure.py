"""One backend: fill a fresh store with offline runs, then measure every style, interleaved."""

from __future__ import annotations

import cProfile
import gc
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.common import interleaved, place, print_profile
from bench.projections import (
    CEILING,
    ES_RUNNER,
    KNOWLEDGE,
    MEASUREMENTS,
    OURS,
    PAGE,
    PER_EVENT,
    PER_EVENT_ONE,
    PROFILE_LINES,
    SMALL_TALK,
    TURNS_PER_SESSION,
)
from bench.projections.phases import measure_phases
from bench.projections.styles import Bench
from bootstrap.composition import Overrides, bootstrap
from infrastructure.ops_data import sample_incidents

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.store import HarnessStore
    from bench.projections.phases import Phases
    from bench.projections.styles import Sample
    from bootstrap.composition import Services


def questions() -> list[str]:
    """The question mix, one cycle: every sample incident, then small talk and a knowledge one."""
    return [incident.question for incident in sample_incidents()] + [SMALL_TALK, KNOWLEDGE]


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
    phases: Phases | None = None
    """One rebuild in parts (``--phases``)."""

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


def fill(services: Services, runs: int) -> tuple[float, dict[str, int]]:
    """``runs`` runs of the offline model over the question mix; seconds taken and outcomes.

    The runs are made by services of their own on the same store, closed before anything is
    measured (their worker lease's heartbeat and their pool stop with them).
    """
    runtime = bootstrap(services.settings, overrides=Overrides(store=services.store))
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
    for index, name, _ in interleaved(names, [1] * repeat):
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
    print_profile(profiler, f"one Projector.rebuild() on {backend}", PROFILE_LINES)


def bench_backend(
    backend: str, runs: int, repeat: int, prefix: int, profile: bool, phases: bool = False
) -> BackendReport:
    """Fill a store in a fresh place, then measure on it (and take a rebuild apart)."""
    with place(backend) as where, bootstrap(where.settings, create=True, sample=True) as services:
        print(f"  {backend:8} filling the log with {runs} runs …", flush=True)
        fill_seconds, outcomes = fill(services, runs)
        streams = log_streams(services.store)
        entries = sum(streams.values())
        print(f"  {backend:8} {entries} log entries in {fill_seconds:.1f} s", flush=True)
        bench = Bench(services, prefix)
        samples = measure(bench, backend, repeat)
        if profile:
            profile_rebuild(backend, bench)
        parts = measure_phases(bench) if phases else None
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
            parts,
        )
