"""``python -m bench.run``: parse the arguments, measure the chosen backends, report."""

from __future__ import annotations

from bench.common import add_backend, add_profile, banner, chosen, parser
from bench.model_external import add_model
from bench.run import DEFAULT_RUNS, ROUNDS
from bench.run.measure import BackendReport, bench_backend
from bench.run.report import report
from infrastructure.ops_data import sample_incidents


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the chosen backends, print the report."""
    arguments = parser("run")
    arguments.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per measurement")
    add_backend(arguments)
    add_profile(arguments, "one harness run")
    add_model(arguments, "offline")
    args = arguments.parse_args(argv)
    runs: int = max(ROUNDS, args.runs)
    banner()

    reports: list[BackendReport] = []
    for backend in chosen(args.backend):
        reports.append(bench_backend(backend, runs, args.profile, args.model))
    report(reports, runs, sample_incidents()[0].question)


if __name__ == "__main__":
    main()
