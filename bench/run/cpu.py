"""The Python CPU of one diagnosis run: process CPU per run, a profile, instructions per run.

Run from the repository root::

    .venv/bin/python -m bench.run.cpu [--runs N] [--backend sqlite|postgres]
    valgrind --tool=callgrind --instr-atstart=no \\
        .venv/bin/python -m bench.run.cpu --instructions [--runs N]

The runs are ``bench.run``'s (``ChatService.ask`` of the first sample incident, the composition
root set up by :func:`bench.run.measure.open_harness`), made back to back after 10 warm-up runs.
Without ``--instructions`` it prints the process CPU (user + system) per run over 5 batches of
``--runs`` runs, then cProfiles ``--runs`` more and prints the top functions by own and by
cumulative time, with the profile's call count (the same on every machine, for a given log
length). With ``--instructions``, under callgrind, instrumentation is switched on only around
``--runs`` runs (``callgrind_control``); callgrind's ``Collected`` total divided by the runs is
the instructions per run, a figure a shared, noisy machine does not blur. Set ``TMPDIR`` to a
tmpfs (``/dev/shm``) to keep SQLite's fsyncs out of the CPU figures. Nothing is asserted.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import subprocess
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING

from bench.common import banner, parser, place, print_profile
from bench.run import PROFILE_LINES, SESSION
from bench.run.measure import open_harness

if TYPE_CHECKING:
    from collections.abc import Callable

WARM_UP = 10
BATCHES = 5


def _instrument(state: str) -> None:
    """Switch callgrind's instrumentation of this process ``on`` or ``off``."""
    command = ["callgrind_control", "-i", state, str(os.getpid())]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, set up the harness, measure and print."""
    arguments = parser("run.cpu")
    arguments.add_argument("--runs", type=int, default=100, help="runs per batch")
    arguments.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    arguments.add_argument(
        "--instructions", action="store_true", help="under callgrind: instrument only the runs"
    )
    args = arguments.parse_args(argv)
    runs: int = max(1, args.runs)
    banner()
    with ExitStack() as stack:
        where = stack.enter_context(place(args.backend))
        runtime, question = open_harness(stack, where.settings)

        def ask() -> None:
            runtime.chat.ask(SESSION, question)

        for _ in range(WARM_UP):
            ask()
        if args.instructions:
            _instrument("on")
            for _ in range(runs):
                ask()
            _instrument("off")
            print(f"{runs} runs instrumented: callgrind's 'Collected' / {runs} = per run")
        else:
            _measure(ask, runs, args.backend)


def _measure(ask: Callable[[], None], runs: int, backend: str) -> None:
    """Process CPU per run over :data:`BATCHES` batches, then a profile of ``runs`` more."""
    per_run: list[float] = []
    for _ in range(BATCHES):
        began = time.process_time()
        for _ in range(runs):
            ask()
        per_run.append(1000 * (time.process_time() - began) / runs)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        ask()
    profiler.disable()
    print_profile(profiler, f"{runs} runs on {backend}", PROFILE_LINES)
    calls = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
    batches = " ".join(f"{ms:.2f}" for ms in per_run)
    print(f"\nprocess CPU per run, ms, {BATCHES} batches of {runs}: {batches}")
    low, middle = min(per_run), statistics.median(per_run)
    print(f"min {low:.2f}, median {middle:.2f}; the profile: {calls} calls")


if __name__ == "__main__":
    main()
