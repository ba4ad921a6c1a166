"""The peers report: the aligned table, the ratios against the target, then JSON lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.common import print_json, print_ratios_json, verdict
from bench.peers import OURS, ROUNDS, TARGET, WARM_UP

if TYPE_CHECKING:
    from bench.run.measure import Result


def ratios(results: list[Result]) -> list[dict[str, Any]]:
    """The project's run over each peer measurement of the same backend, by p50 and p95."""
    ours = {r.backend: r for r in results if r.name == OURS}
    return [
        {
            "backend": r.backend,
            "measure": OURS,
            "peer": r.name,
            "over_peer_p50": round(ours[r.backend].percentile_ms(50) / r.percentile_ms(50), 3),
            "over_peer_p95": round(ours[r.backend].percentile_ms(95) / r.percentile_ms(95), 3),
            "target": TARGET,
        }
        for r in results
        if r.name != OURS
    ]


def print_table(results: list[Result], runs: int) -> None:
    """One row per backend and measurement: mean, p50 and p95 milliseconds per run."""
    print()
    print(f"runs per measurement: {runs} after {WARM_UP} warm-up runs; {ROUNDS} interleaved rounds")
    header = (
        f"{'backend':8}  {'measure':15}  {'runs':>5}  {'mean ms':>8}  {'p50 ms':>8}  {'p95 ms':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.backend:8}  {r.name:15}  {len(r.seconds):5d}  {r.mean_ms:8.2f}  "
            f"{r.percentile_ms(50):8.2f}  {r.percentile_ms(95):8.2f}"
        )


def report(per_backend: list[list[Result]], runs: int) -> None:
    """The table, the ratios (target: harness / peer <= TARGET at p50), then JSON lines."""
    results = [r for backend in per_backend for r in backend]
    print_table(results, runs)
    computed = ratios(results)
    print()
    print(f"target: {OURS} / LangGraph + checkpointer <= {TARGET} (p50, same store)")
    for ratio in computed:
        met = verdict(ratio["over_peer_p50"] <= TARGET, "ABOVE")
        print(
            f"{ratio['backend']:8}  {OURS}/{ratio['peer']:15} p50 {ratio['over_peer_p50']:6.3f}  "
            f"p95 {ratio['over_peer_p95']:6.3f} ({met})"
        )
    print()
    print_json(r.json_line() for r in results)
    print_ratios_json(computed)
