"""Measuring one backend: the project's run and the peer's, interleaved in rotating rounds."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from bench.common import interleaved, place, shares
from bench.peers import OURS, ROUNDS, WARM_UP
from bench.run import SESSION
from bench.run.measure import Result, open_harness, timed_runs

if TYPE_CHECKING:
    from collections.abc import Callable


def measure(backend: str, runners: dict[str, Callable[[], object]], runs: int) -> list[Result]:
    """Warm up every runner, then ``runs`` runs each in interleaved, rotating rounds."""
    names = list(runners)
    for name in names:
        timed_runs(runners[name], WARM_UP)
    durations: dict[str, list[float]] = {name: [] for name in names}
    for _, name, share in interleaved(names, shares(runs, ROUNDS)):
        durations[name] += timed_runs(runners[name], share)
    results = [Result(backend, name, tuple(durations[name])) for name in names]
    for r in results:
        print(
            f"  {backend:8} {r.name:15} p50 {r.percentile_ms(50):7.2f} ms  "
            f"p95 {r.percentile_ms(95):7.2f} ms",
            flush=True,
        )
    return results


def bench_backend(backend: str, runs: int, ours_only: bool) -> list[Result]:
    """The project's run (set up as ``bench.run`` does) and, unless ``ours_only``, the peer's."""
    with place(backend) as where, ExitStack() as stack:
        # PostgreSQL: the project's store creates the schema the peer's tables then go in
        runtime, question = open_harness(stack, where.settings)
        runners: dict[str, Callable[[], object]] = {
            OURS: lambda: runtime.chat.ask(SESSION, question)
        }
        if not ours_only:
            from bench.peers import peer  # the optional extra: imported only when asked for

            runners |= peer.runners(stack.enter_context(peer.saver(where)), question)
        return measure(backend, runners, runs)
