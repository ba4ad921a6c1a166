"""``python -m bench.append``: parse the arguments, measure the chosen backends, report."""

from __future__ import annotations

from bench.append import BATCH_EVENTS, DEFAULT_EVENTS
from bench.append.measure import Result, bench_backend
from bench.append.report import report
from bench.append.workload import bare_padding, sample_run_payloads
from bench.common import add_backend, banner, chosen, parser


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the chosen backends, print the report."""
    arguments = parser("append")
    arguments.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="events per writer")
    add_backend(arguments)
    args = arguments.parse_args(argv)
    events: int = max(BATCH_EVENTS, args.events)

    payloads = sample_run_payloads()
    mean_state = sum(len(state) for _, state in payloads) / len(payloads)
    padding = bare_padding(mean_state)
    banner()

    results: list[Result] = []
    for backend in chosen(args.backend):
        results += bench_backend(backend, events, payloads, padding)
    report(results, mean_state, events)


if __name__ == "__main__":
    main()
