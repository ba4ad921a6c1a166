"""Measuring one backend: the project's run and the peer's, interleaved in rotating rounds.

Per run it keeps the wall time and the seconds inside its model calls (and its tool calls), so
the report can give the run minus its model time; per measurement it keeps the process CPU
(``time.process_time``, every thread of this process: never the stub's, nor PostgreSQL's).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.common import interleaved, place, shares
from bench.model_external import model_settings
from bench.peers import OURS, ROUNDS, WARM_UP
from bench.run import SESSION
from bench.run.measure import Result, open_harness
from bench.run.ports import PortTimer, time_ports

if TYPE_CHECKING:
    from bench.run.ports import PortSeconds


@dataclass(frozen=True)
class Measured:
    """One system on one backend: per run its seconds and port seconds; its process CPU."""

    backend: str
    name: str
    seconds: tuple[float, ...]
    ports: tuple[PortSeconds, ...]
    cpu_seconds: float
    """Process CPU of all the measured runs together."""

    @property
    def run(self) -> Result:
        """The runs end to end."""
        return Result(self.backend, self.name, self.seconds)

    @property
    def minus_model(self) -> Result:
        """Each run minus the seconds inside its model calls."""
        rest = tuple(s - p.model for s, p in zip(self.seconds, self.ports, strict=True))
        return Result(self.backend, self.name, rest)

    def mean_ms(self, what: str) -> float:
        """Mean milliseconds per run inside ``what`` (``model`` or ``tools``) of the ports."""
        seconds: float = sum(getattr(p, what) for p in self.ports)
        return 1000 * seconds / len(self.ports)

    @property
    def model_calls(self) -> float:
        """Model calls per run."""
        return sum(p.model_calls for p in self.ports) / len(self.ports)

    @property
    def cpu_ms(self) -> float:
        """Process CPU milliseconds per run."""
        return 1000 * self.cpu_seconds / len(self.seconds)


Runner = tuple[Callable[[], object], PortTimer]
"""A run, and the timer its ports count in (it records one entry per run)."""


def timed_runs(runner: Runner, count: int) -> tuple[list[float], list[PortSeconds], float]:
    """``count`` runs: the seconds and port seconds of each, and the process CPU of them all."""
    run, timer = runner
    gc.collect()
    seconds: list[float] = []
    ports: list[PortSeconds] = []
    cpu = time.process_time()
    for _ in range(count):
        began = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - began)
        ports.append(timer.runs[-1])
    return seconds, ports, time.process_time() - cpu


def measure(backend: str, runners: dict[str, Runner], runs: int) -> list[Measured]:
    """Warm up every runner, then ``runs`` runs each in interleaved, rotating rounds."""
    names = list(runners)
    for name in names:
        timed_runs(runners[name], WARM_UP)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    ports: dict[str, list[PortSeconds]] = {name: [] for name in names}
    cpu = dict.fromkeys(names, 0.0)
    for _, name, share in interleaved(names, shares(runs, ROUNDS)):
        more, more_ports, more_cpu = timed_runs(runners[name], share)
        seconds[name] += more
        ports[name] += more_ports
        cpu[name] += more_cpu
    results = [
        Measured(backend, name, tuple(seconds[name]), tuple(ports[name]), cpu[name])
        for name in names
    ]
    for m in results:
        print(
            f"  {backend:8} {m.name:15} p50 {m.run.percentile_ms(50):7.2f} ms, minus model "
            f"{m.minus_model.percentile_ms(50):7.2f} ms, CPU {m.cpu_ms:6.2f} ms",
            flush=True,
        )
    return results


def bench_backend(backend: str, runs: int, ours_only: bool, model: str) -> list[Measured]:
    """The project's run (set up as ``bench.run`` does) and, unless ``ours_only``, the peer's."""
    with ExitStack() as stack:
        extra = stack.enter_context(model_settings(model))  # the stub outlives both systems
        where = stack.enter_context(place(backend, **extra))
        # PostgreSQL: the project's store creates the schema the peer's tables then go in
        runtime, question = open_harness(stack, where.settings)  # the stub learns its script
        tools = dict(runtime.chat.tools)
        ours = time_ports(runtime)
        runners: dict[str, Runner] = {
            OURS: (ours.wrap(lambda: runtime.chat.ask(SESSION, question)), ours)
        }
        if not ours_only:
            from bench.peers import peer  # the optional extra: imported only when asked for

            timer = PortTimer()
            parts = (
                peer.offline_agent_parts(timer)
                if model == "offline"
                else peer.external_agent_parts(extra["openai_base_url"], tools, timer)
            )
            checkpointer = stack.enter_context(peer.saver(where))
            for name, run in peer.runners(checkpointer, question, parts).items():
                runners[name] = (timer.wrap(run), timer)
        return measure(backend, runners, runs)
