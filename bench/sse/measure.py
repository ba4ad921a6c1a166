"""One measured run after another: start it held, let the observers in, collect every done."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.common import percentile, shares
from bench.sse import CONNECT_TIMEOUT, FINISH_TIMEOUT, QUESTION, WARM_UP_NOTIFIES, WARM_UP_RUNS

if TYPE_CHECKING:
    import httpx

    from application.store import HarnessStore
    from bench.sse.observers import Observers
    from bench.sse.service import GatedProvider, Stamps


@dataclass(frozen=True)
class RunSample:
    """One run: its observers' done arrivals and the breakdown instants (perf_counter seconds)."""

    run_id: str
    connected: int
    connect_s: float
    appended: float
    projected: float | None
    arrivals: tuple[float, ...]
    frames: dict[str, int]
    outcomes: dict[str, int]
    errors: tuple[str, ...]

    @property
    def delays(self) -> list[float]:
        """Seconds from RUN_FINISHED appended to each done arrival."""
        return [a - self.appended for a in self.arrivals]


class Bench:
    """Runs watched by many observers, against one served app."""

    def __init__(
        self,
        http: httpx.Client,
        observers: Observers,
        gated: GatedProvider,
        stamps: Stamps,
        store: HarnessStore,
    ) -> None:
        self.http = http
        self.observers = observers
        self.gated = gated
        self.stamps = stamps
        self.store = store

    def run(self) -> RunSample:
        """Start a held run, connect the observers, open the gate, collect every done."""
        self.gated.gate.clear()
        try:
            created = self.http.post("/v1/runs", json={"query": QUESTION})
            created.raise_for_status()
            run_id, path = created.json()["run_id"], created.json()["stream"]
            self.observers.pipe.send(("watch", path))
            connected, connect_s = self.observers.receive("in", CONNECT_TIMEOUT + 10)
        finally:
            self.gated.gate.set()
        arrivals, frames, outcomes, errors = self.observers.receive("done", FINISH_TIMEOUT + 10)
        appended = self.stamps.finished_at(run_id, FINISH_TIMEOUT)
        if appended is None:
            seen = f"observers saw {dict(frames)}, errors {errors[:3]}"
            raise RuntimeError(f"run {run_id}: no RUN_FINISHED was appended ({seen})")
        position = self.store.head()  # the run's RUN_FINISHED: nothing else writes meanwhile
        return RunSample(
            run_id,
            connected,
            connect_s,
            appended,
            self.stamps.projected(position, appended),
            tuple(arrivals),
            frames,
            outcomes,
            tuple(errors),
        )


@dataclass
class Results:
    """Everything measured."""

    runs: list[RunSample] = field(default_factory=list)
    notifies: list[float] = field(default_factory=list)

    @property
    def delays(self) -> list[float]:
        """Every observer's done delay of every run."""
        return [d for run in self.runs for d in run.delays]


def measure(bench: Bench, runs: int, notifies: int) -> Results:
    """Warm up, then the runs, each followed by its share of NOTIFY round trips."""
    for index in range(WARM_UP_RUNS):
        print(f"  warm-up {index + 1}: {summary(bench.run())}", flush=True)
    bench.observers.round_trips(WARM_UP_NOTIFIES)
    results = Results()
    for index, share in enumerate(shares(notifies, runs)):
        sample = bench.run()
        results.runs.append(sample)
        trips = bench.observers.round_trips(share) if share else []
        results.notifies += trips
        notify = f"  notify p50 {1000 * percentile(trips, 50):.3f} ms" if trips else ""
        print(f"  run {index + 1:3d}/{runs}: {summary(sample)}{notify}", flush=True)
    return results


def summary(sample: RunSample) -> str:
    """One line on a run (its observers' failures, if any, printed first)."""
    for error in sample.errors[:3]:
        print(f"    an observer failed: {error}", flush=True)
    delays = sample.delays
    if not delays:
        return f"no done arrived ({sample.connected} observers were connected)"
    projected = "n/a"
    if sample.projected is not None:
        projected = f"+{1000 * (sample.projected - sample.appended):.1f} ms"
    return (
        f"{sample.connected} in {sample.connect_s:.2f} s; done delay p50 "
        f"{1000 * percentile(delays, 50):6.1f} ms, max {1000 * max(delays):6.1f} ms "
        f"(projected {projected})"
    )
