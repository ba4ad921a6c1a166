"""``python -m bench.projections``: parse the arguments, measure the chosen backends, report."""

from __future__ import annotations

import time

from bench.common import add_backend, add_profile, banner, chosen, parser
from bench.projections import DEFAULT_PREFIX, DEFAULT_REPEAT, DEFAULT_RUNS
from bench.projections.measure import BackendReport, bench_backend
from bench.projections.report import report


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the chosen backends, print the report."""
    arguments = parser("projections")
    arguments.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help="ask() runs to fill the log"
    )
    arguments.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, help="rounds per measure")
    arguments.add_argument(
        "--prefix", type=int, default=DEFAULT_PREFIX, help="log entries the per-event styles cover"
    )
    add_backend(arguments)
    add_profile(arguments, "one rebuild")
    arguments.add_argument(
        "--phases",
        action="store_true",
        help="also time one rebuild in parts (reading, each projection, inserts, commits)",
    )
    args = arguments.parse_args(argv)
    runs: int = max(1, args.runs)
    repeat: int = max(1, args.repeat)
    prefix: int = max(1, args.prefix)
    banner()
    began = time.perf_counter()
    reports: list[BackendReport] = []
    for backend in chosen(args.backend):
        reports.append(bench_backend(backend, runs, repeat, prefix, args.profile, args.phases))
    report(reports, repeat)
    print(f"\n(total {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
