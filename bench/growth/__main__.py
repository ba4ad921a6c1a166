"""``python -m bench.growth``: grow a store on each chosen backend, measuring at each size."""

from __future__ import annotations

import argparse

from bench.common import add_backend, banner, chosen, parser
from bench.growth import DEFAULT_SIZES, SAMPLES
from bench.growth.measure import Grown, bench_backend
from bench.growth.memory import trace_memory
from bench.growth.report import report


def size(text: str) -> int:
    """A store size: a whole number of runs above 0."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return value


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, grow and measure each backend, report."""
    arguments = parser("growth")
    arguments.add_argument(
        "--sizes", type=size, nargs="+", default=list(DEFAULT_SIZES), help="store sizes, in runs"
    )
    arguments.add_argument("--samples", type=size, default=SAMPLES, help="timings per read")
    arguments.add_argument(
        "--trace-memory",
        action="store_true",
        help="instead: trace what the worker holds between the smallest and largest size",
    )
    add_backend(arguments)
    args = arguments.parse_args(argv)
    sizes = sorted(set(args.sizes))
    banner()
    if args.trace_memory:
        for backend in chosen(args.backend):
            trace_memory(backend, sizes[0], sizes[-1])
        return
    results: list[Grown] = [bench_backend(b, sizes, args.samples) for b in chosen(args.backend)]
    report(results)


if __name__ == "__main__":
    main()
