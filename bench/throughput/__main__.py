"""``python -m bench.throughput``: start the servers, drive them in rounds, report."""

from __future__ import annotations

import argparse
import time
from contextlib import ExitStack

from bench.common import banner, interleaved, parser
from bench.throughput import CLIENTS, DEFAULT_SECONDS, ROUNDS, WARM_UP, WORKERS
from bench.throughput.load import run_load
from bench.throughput.measure import Tally, measure_round
from bench.throughput.report import report
from bench.throughput.server import fresh_database, serving
from infrastructure.ops_data import sample_incidents


def positive(text: str) -> float:
    """An argument that must be a number above 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def count(text: str) -> int:
    """An argument that must be a whole number above 0."""
    value = positive(text)
    if value != int(value):
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text}")
    return int(value)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, serve each worker count on its own database, measure, report."""
    arguments = parser("throughput")
    arguments.add_argument(
        "--seconds", type=positive, default=DEFAULT_SECONDS, help="measured seconds per server"
    )
    arguments.add_argument("--clients", type=count, default=CLIENTS, help="concurrent clients")
    arguments.add_argument(
        "--workers", type=count, nargs="+", default=list(WORKERS), help="worker counts to serve"
    )
    arguments.add_argument(
        "--runs-per-round", type=count, default=None, help="stop a round after this many runs"
    )
    args = arguments.parse_args(argv)
    args.workers = sorted(set(args.workers))
    began = time.monotonic()
    banner()
    question = sample_incidents()[0].question
    with ExitStack() as stack:
        servers = {}
        for workers in args.workers:
            database = stack.enter_context(fresh_database())
            servers[workers] = stack.enter_context(serving(database, workers, args.clients))
            run_load(servers[workers].base, question, args.clients, WARM_UP, 2)  # not counted
            print(
                f"  {workers} worker(s) ready at {servers[workers].base} ({database})", flush=True
            )
        tallies = {workers: Tally(workers) for workers in args.workers}
        rounds = [args.seconds / ROUNDS] * ROUNDS
        for index, workers, seconds in interleaved(args.workers, rounds):
            server, tally = servers[workers], tallies[workers]
            measure_round(server, tally, question, args.clients, seconds, args.runs_per_round)
            print(
                f"  round {index + 1}: {workers} worker(s), {len(tally.durations)} runs", flush=True
            )
    report(list(tallies.values()), args.clients, began)


if __name__ == "__main__":
    main()
