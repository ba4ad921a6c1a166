"""Measuring one backend: the real run's shape, then the harness and its floors, interleaved."""

from __future__ import annotations

import cProfile
import gc
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.common import interleaved, percentile, place, print_profile, shares
from bench.floor import BareBench
from bench.model_external import model_settings
from bench.run import MEASUREMENTS, MODEL_FREE, OVERHEAD, PROFILE_LINES, ROUNDS, SESSION, WARM_UP
from bench.run.ports import time_ports
from bench.run.replay import Floor, padded_plan
from bench.run.shape import capture_shape
from bootstrap.composition import bootstrap
from infrastructure.ops_data import sample_incidents

if TYPE_CHECKING:
    from collections.abc import Callable

    from bench.run.ports import PortTimer
    from bench.run.shape import Shape
    from bootstrap.composition import Services
    from infrastructure.settings import Settings


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
        return 1000 * percentile(self.seconds, p)

    def json_line(self) -> dict[str, object]:
        """The ``"kind": "run"`` JSON line the run and peers benches print for it."""
        return {
            "kind": "run",
            "backend": self.backend,
            "measure": self.name,
            "runs": len(self.seconds),
            "mean_ms": round(self.mean_ms, 3),
            "p50_ms": round(self.percentile_ms(50), 3),
            "p95_ms": round(self.percentile_ms(95), 3),
        }


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
    harness run minus its port seconds, :data:`MODEL_FREE` each run minus its model seconds.
    """
    for name in MEASUREMENTS:
        timed_runs(runners[name], WARM_UP)
    ports.runs.clear()
    durations: dict[str, list[float]] = {name: [] for name in MEASUREMENTS}
    for _, name, share in interleaved(MEASUREMENTS, shares(runs, ROUNDS)):
        durations[name] += timed_runs(runners[name], share)
    results = [Result(backend, name, tuple(durations[name])) for name in MEASUREMENTS]
    if len(ports.runs) != len(durations["harness"]):
        raise RuntimeError("port timings do not match the harness runs")
    timed = list(zip(durations["harness"], ports.runs, strict=True))
    results.append(Result(backend, OVERHEAD, tuple(d - p.total for d, p in timed)))
    results.append(Result(backend, MODEL_FREE, tuple(d - p.model for d, p in timed)))
    for r in results:
        print(f"  {backend:8} {r.name:13} {r.mean_ms:8.2f} ms/run", flush=True)
    return results


def profile_run(backend: str, runtime: Services, question: str) -> None:
    """Profile one harness run and print the top functions by own and by cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    runtime.chat.ask(SESSION, question)
    profiler.disable()
    print_profile(profiler, f"one harness run on {backend}", PROFILE_LINES)


def open_harness(stack: ExitStack, settings: Settings) -> tuple[Services, str]:
    """The composition root on ``settings`` (tables, sample data), and the question it answered.

    The question is the first sample incident's; one run of it is made here, so first-use costs
    (caches, prepared statements, the session's first turn) stay out of what is measured.
    """
    question = sample_incidents()[0].question
    runtime = stack.enter_context(bootstrap(settings, create=True, sample=True))
    runtime.chat.ask(SESSION, question)
    return runtime, question


@dataclass(frozen=True)
class BackendReport:
    """What one backend produced."""

    backend: str
    shape: Shape
    floor_state_bytes: int
    floor_reads: tuple[int, int]
    results: list[Result]
    model: str
    model_calls: float
    """Model calls per measured harness run."""


def bench_backend(backend: str, runs: int, profile: bool, model: str) -> BackendReport:
    """Sample data, the shape of one real run, then the three measurements in a fresh place.

    ``model`` (``offline`` or ``external``) is what the harness calls; the shape is captured
    with the ports timed as they are while measured, so the floor replays the measured plan.
    """
    with ExitStack() as stack:
        extra = stack.enter_context(model_settings(model))  # the stub outlives the runtime
        where = stack.enter_context(place(backend, **extra))
        # PostgreSQL: the project's store creates the schema the floors then write in
        runtime, question = open_harness(stack, where.settings)
        ports = time_ports(runtime)
        shape = capture_shape(runtime, question)
        plan, floor_bytes = padded_plan(shape)
        floor = Floor(BareBench(env=where.bare_env), plan, reads=False)
        stack.callback(floor.close)
        floor_get = Floor(BareBench(env=where.bare_env), plan, reads=True)
        stack.callback(floor_get.close)
        runners: dict[str, Callable[[], object]] = {
            "harness": ports.wrap(lambda: runtime.chat.ask(SESSION, question)),
            "floor": floor.run,
            "floor+get": floor_get.run,
        }
        results = measure(backend, runners, runs, ports)
        calls = sum(p.model_calls for p in ports.runs) / len(ports.runs)
        if profile:
            profile_run(backend, runtime, question)
        return BackendReport(backend, shape, floor_bytes, floor_get.reads(), results, model, calls)
