"""The growth report: fill times and memory, p50/p95 per read and size, the ratios, then JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.common import print_json, print_ratios_json
from bench.growth import MEASURES
from bench.growth.plans import print_plans

if TYPE_CHECKING:
    from bench.growth.measure import Grown

WHAT = {
    "run": "one diagnosis run, end to end",
    "first": "GET /v1/runs, first page",
    "deep": "GET /v1/runs, deep page",
    "filter_status": "GET /v1/runs?status=SUCCESS",
    "filter_intent": "GET /v1/runs?intent=SYSTEM_CHAT",
    "filter_window": "GET /v1/runs, a time window",
    "trace": "GET /v1/runs/{id}/trace, oldest run",
    "cli": "harness runs list (in process)",
}


def ratios(grown: Grown) -> list[dict[str, Any]]:
    """Per measurement, p50 at the largest size over p50 at the smallest; and RSS the same."""
    small, large = grown.sizes[0], grown.sizes[-1]
    found = [
        {
            "backend": grown.backend,
            "measure": name,
            "size": large.runs,
            "over_size": small.runs,
            "p50_ratio": round(large.p(name, 50) / small.p(name, 50), 3),
        }
        for name in MEASURES
    ]
    found.append(
        {
            "backend": grown.backend,
            "measure": "rss",
            "size": large.runs,
            "over_size": small.runs,
            "rss_ratio": round(large.rss_kb / small.rss_kb, 3),
        }
    )
    return found


def print_backend(grown: Grown) -> None:
    """One backend's fill, memory, table of percentiles and heavy runs."""
    print(f"\n{grown.backend}:")
    for size in grown.sizes:
        print(
            f"  {size.runs:>7} runs: filled in {size.fill_seconds:7.1f} s, RSS "
            f"{size.rss_kb / 1024:6.1f} MB, deep page = page {size.deep_page}"
        )
    header = f"  {'measure':40}" + "".join(f"{s.runs:>9} p50/p95 ms" for s in grown.sizes)
    print(header + "   p50 ratio")
    ratio = {r["measure"]: r for r in ratios(grown)}
    for name in MEASURES:
        cells = "".join(f"{s.p(name, 50):>9.2f} /{s.p(name, 95):>8.2f}" for s in grown.sizes)
        print(f"  {WHAT[name]:40}{cells}   {ratio[name]['p50_ratio']:8.2f}")
    print(f"  RSS largest / smallest size: {ratio['rss']['rss_ratio']:.2f}")
    for heavy in grown.heavy:
        print(
            f"  heavy run, {heavy.name}: {heavy.outcome}, {heavy.tool_calls} tool calls, "
            f"{1000 * heavy.seconds:.0f} ms, RSS after {heavy.rss_kb / 1024:.1f} MB, peak rose "
            f"{heavy.peak_rise_kb / 1024:.1f} MB"
        )


def json_lines(grown: Grown) -> list[dict[str, Any]]:
    """The figures of one backend as JSON objects (the ratios come apart)."""
    lines: list[dict[str, Any]] = []
    for size in grown.sizes:
        lines.append(
            {
                "kind": "fill",
                "backend": grown.backend,
                "runs": size.runs,
                "fill_seconds": round(size.fill_seconds, 2),
                "rss_kb": size.rss_kb,
            }
        )
        lines += [
            {
                "kind": "growth",
                "backend": grown.backend,
                "runs": size.runs,
                "measure": name,
                "samples": len(size.seconds[name]),
                "p50_ms": round(size.p(name, 50), 3),
                "p95_ms": round(size.p(name, 95), 3),
            }
            for name in MEASURES
        ]
    lines += [{"kind": "heavy", "backend": grown.backend, **vars(h)} for h in grown.heavy]
    return lines


def report(results: list[Grown]) -> None:
    """Every backend's figures and plans, the ratios, then JSON lines."""
    for grown in results:
        print_backend(grown)
    for grown in results:
        suspects = print_plans(grown.backend, grown.plans)
        print(f"  {suspects} plan line(s) marked on {grown.backend}")
        if grown.note:
            print(f"  note: {grown.note}")
    print()
    print_json(line for grown in results for line in json_lines(grown))
    print_ratios_json(ratio for grown in results for ratio in ratios(grown))
