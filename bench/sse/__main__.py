"""``python -m bench.sse``: serve the app in a fresh schema, measure the runs, report."""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import httpx
import psycopg

from bench.common import banner, parser, pg_conninfo, place
from bench.sse import (
    DEFAULT_NOTIFIES,
    DEFAULT_OBSERVERS,
    DEFAULT_RUNS,
    FINISH_TIMEOUT,
    QUESTION,
    WARM_UP_RUNS,
)
from bench.sse.measure import Bench, Results, measure
from bench.sse.observers import Observers
from bench.sse.report import report
from bench.sse.service import instrument, serving
from bootstrap.composition import bootstrap

if TYPE_CHECKING:
    import argparse

    from bench.sse.service import Served
    from infrastructure.settings import Settings


def server_version() -> str:
    """The PostgreSQL server version."""
    with psycopg.connect(pg_conninfo(), autocommit=True) as conn:
        found = conn.execute("SHOW server_version").fetchone()
        return str(found[0]) if found else "?"


def observers_in_process(asked: bool) -> bool:
    """Whether the observers share this process: asked, or the clock is not system-wide."""
    clock = time.get_clock_info("perf_counter").implementation
    if asked or "CLOCK_MONOTONIC" in clock:
        return asked
    print(f"perf_counter is {clock}, not CLOCK_MONOTONIC: observers in this process instead")
    return True


def setup_of(served: Served, args: argparse.Namespace, in_process: bool) -> dict[str, Any]:
    """What is served and how it is observed, for the report."""
    return {
        "postgres": server_version(),
        "cpus": os.cpu_count(),
        "loop": served.loop,
        "http": served.http,
        "observers": args.observers,
        "observers_in": "this process" if in_process else "their own process",
        "client": args.client,
        "runs": args.runs,
        "warm_up_runs": WARM_UP_RUNS,
        "notifies": args.notifies,
        "question": QUESTION,
    }


def serve_and_measure(
    settings: Settings, args: argparse.Namespace
) -> tuple[dict[str, Any], Results]:
    """Store, sample data and server in place; hook the gate and the stamps; measure."""
    with ExitStack() as stack:
        # the composition root creates the schema and loads the sample data; the app serves
        # the very same store, so the bench's listeners see its appends
        services = stack.enter_context(bootstrap(settings, create=True, sample=True))
        served = stack.enter_context(serving(settings, services.store))
        gated, stamps = instrument(served, services.store)
        in_process = observers_in_process(args.in_process)
        observers = Observers(served.base, args.observers, args.client, in_process=in_process)
        stack.callback(observers.close)
        http = stack.enter_context(httpx.Client(base_url=served.base, timeout=FINISH_TIMEOUT))
        bench = Bench(http, observers, gated, stamps, services.store)
        setup = setup_of(served, args, in_process)
        return setup, measure(bench, args.runs, args.notifies)


def arguments() -> argparse.ArgumentParser:
    """The command line of ``python -m bench.sse``."""
    found = parser("sse")
    found.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="measured runs")
    found.add_argument(
        "--observers", type=int, default=DEFAULT_OBSERVERS, help="streams watching each run"
    )
    found.add_argument(
        "--notifies", type=int, default=DEFAULT_NOTIFIES, help="NOTIFY round trips in all"
    )
    found.add_argument(
        "--in-process",
        action="store_true",
        help="observers in a thread of the server's process (sharing its GIL), not their own",
    )
    found.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="observers' HTTP client: a minimal one on asyncio streams, or httpx.AsyncClient",
    )
    return found


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, measure in a fresh schema, print the report."""
    args = arguments().parse_args(argv)
    args.runs, args.observers = max(1, args.runs), max(1, args.observers)
    args.notifies = max(1, args.notifies)
    banner()
    began = time.perf_counter()
    try:
        with place("postgres", model="offline", projections_in_process=True) as where:
            setup, results = serve_and_measure(where.settings, args)
    except KeyboardInterrupt:
        print("\ninterrupted; the bench schema was dropped", file=sys.stderr)
        sys.exit(130)
    report(setup, results)
    print(f"\n(total {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
