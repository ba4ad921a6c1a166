"""The peers report: the aligned table, the ratios against the target, then JSON lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.common import print_json, print_ratios_json, verdict
from bench.peers import OURS, ROUNDS, TARGET, WARM_UP

if TYPE_CHECKING:
    from bench.peers.measure import Measured


def run_line(m: Measured, model: str) -> dict[str, Any]:
    """The ``"kind": "run"`` JSON line of one measurement."""
    rest = m.minus_model
    return {
        **m.run.json_line(),
        "model": model,
        "model_calls": round(m.model_calls, 2),
        "model_ms_mean": round(m.mean_ms("model"), 3),
        "tools_ms_mean": round(m.mean_ms("tools"), 3),
        "minus_model_p50_ms": round(rest.percentile_ms(50), 3),
        "minus_model_mean_ms": round(rest.mean_ms, 3),
        "cpu_ms_per_run": round(m.cpu_ms, 3),
    }


def ratios(results: list[Measured], model: str) -> list[dict[str, Any]]:
    """The project's run over each peer measurement of the same backend."""
    ours = {m.backend: m for m in results if m.name == OURS}

    def over(mine: float, theirs: float) -> float:
        return round(mine / theirs, 3)

    return [
        {
            "backend": m.backend,
            "model": model,
            "measure": OURS,
            "peer": m.name,
            "minus_model_over_peer_p50": over(
                ours[m.backend].minus_model.percentile_ms(50), m.minus_model.percentile_ms(50)
            ),
            "minus_model_over_peer_mean": over(
                ours[m.backend].minus_model.mean_ms, m.minus_model.mean_ms
            ),
            "over_peer_p50": over(ours[m.backend].run.percentile_ms(50), m.run.percentile_ms(50)),
            "over_peer_p95": over(ours[m.backend].run.percentile_ms(95), m.run.percentile_ms(95)),
            "cpu_over_peer": over(ours[m.backend].cpu_ms, m.cpu_ms),
            "target": TARGET,
        }
        for m in results
        if m.name != OURS
    ]


def print_table(results: list[Measured], runs: int, model: str) -> None:
    """One row per backend and measurement: run, model, run minus model, CPU, per run."""
    print()
    print(
        f"model: {model}; runs per measurement: {runs} after {WARM_UP} warm-up runs; {ROUNDS} "
        "interleaved rounds; ms per run"
    )
    header = (
        f"{'backend':8}  {'measure':15}  {'runs':>5}  {'p50':>7}  {'mean':>7}  {'model':>6}  "
        f"{'calls':>5}  {'tools':>6}  {'-model p50':>10}  {'-model mean':>11}  {'CPU':>6}"
    )
    print(header)
    print("-" * len(header))
    for m in results:
        rest = m.minus_model
        print(
            f"{m.backend:8}  {m.name:15}  {len(m.seconds):5d}  {m.run.percentile_ms(50):7.2f}  "
            f"{m.run.mean_ms:7.2f}  {m.mean_ms('model'):6.2f}  {m.model_calls:5.1f}  "
            f"{m.mean_ms('tools'):6.2f}  {rest.percentile_ms(50):10.2f}  {rest.mean_ms:11.2f}  "
            f"{m.cpu_ms:6.2f}"
        )


def report(per_backend: list[list[Measured]], runs: int, model: str) -> None:
    """The table, the ratios (target: run minus model, harness / peer <= TARGET at p50), JSON."""
    results = [m for backend in per_backend for m in backend]
    print_table(results, runs, model)
    computed = ratios(results, model)
    print()
    print(f"target: {OURS} / LangGraph + checkpointer <= {TARGET} (run minus model, p50)")
    for ratio in computed:
        met = verdict(ratio["minus_model_over_peer_p50"] <= TARGET, "ABOVE")
        print(
            f"{ratio['backend']:8}  {OURS}/{ratio['peer']:15} minus model p50 "
            f"{ratio['minus_model_over_peer_p50']:6.3f} mean "
            f"{ratio['minus_model_over_peer_mean']:6.3f} ({met}); end to end p50 "
            f"{ratio['over_peer_p50']:6.3f}; CPU {ratio['cpu_over_peer']:6.3f}"
        )
    print()
    print_json(run_line(m, model) for m in results)
    print_ratios_json(computed)
