"""``python -m bench.metrics``: parse the arguments, measure the chosen backends, report."""

from __future__ import annotations

import time

from bench.common import add_backend, banner, chosen, parser, print_json, verdict
from bench.metrics import DEFAULT_RUNS, DEFAULT_SCRAPES, TARGET_MS
from bench.metrics.measure import FLOOR, SCRAPE, BackendReport, bench_backend

PERCENTILES = (50, 99)


def report(reports: list[BackendReport]) -> None:
    """The table, the verdicts, then one JSON line per backend and percentile."""
    print()
    header = (
        f"{'backend':8}  {'runs':>6}  {'rows':>5}  {'bytes':>6}  {'p':>3}  "
        f"{'scrape ms':>9}  {'floor ms':>8}  {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    lines = []
    for rep in reports:
        for p in PERCENTILES:
            scrape, floor = rep.at(SCRAPE, p), rep.at(FLOOR, p)
            print(
                f"{rep.backend:8}  {rep.runs:6d}  {rep.rows:5d}  {rep.exposition_bytes:6d}  "
                f"{p:3d}  {scrape:9.3f}  {floor:8.3f}  {scrape / floor:6.2f}"
            )
            lines.append(_line(rep, p))
    print()
    for rep in reports:
        p50 = rep.at(SCRAPE, 50)
        print(
            f"{rep.backend}: scrape p50 {p50:.2f} ms at {rep.runs} runs "
            f"(loaded in {rep.load_seconds:.1f} s): {verdict(p50 < TARGET_MS, 'ABOVE')} "
            f"(< {TARGET_MS} ms)"
        )
    print()
    print_json(lines)


def _line(rep: BackendReport, p: int) -> dict[str, object]:
    """One JSON line: a percentile of the scrape, of the floor, and their ratio."""
    scrape, floor = rep.at(SCRAPE, p), rep.at(FLOOR, p)
    return {
        "kind": "ratio",
        "backend": rep.backend,
        "measure": SCRAPE,
        "reference": FLOOR,
        "percentile": p,
        "runs": rep.runs,
        "rows": rep.rows,
        "scrape_ms": round(scrape, 3),
        "floor_ms": round(floor, 3),
        "ratio": round(scrape / floor, 2),
        "target_ms": TARGET_MS,
    }


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the chosen backends, print the report."""
    arguments = parser("metrics")
    arguments.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="finished runs to load")
    arguments.add_argument(
        "--scrapes", type=int, default=DEFAULT_SCRAPES, help="timed scrapes (and floor reads)"
    )
    add_backend(arguments)
    args = arguments.parse_args(argv)
    banner()
    began = time.perf_counter()
    reports = [
        bench_backend(backend, max(1, args.runs), max(1, args.scrapes))
        for backend in chosen(args.backend)
    ]
    report(reports)
    print(f"\n(total {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
