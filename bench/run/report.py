"""The run report: each backend's shape, the aligned table, the ratios, then JSON lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.common import print_json, print_ratios_json, verdict
from bench.run import MEASUREMENTS, MODEL_FREE, OVERHEAD, ROUNDS, TARGET, WARM_UP

if TYPE_CHECKING:
    from bench.run.measure import BackendReport


def ratios(report: BackendReport) -> list[dict[str, Any]]:
    """The harness end to end, minus its ports and minus its model, over each floor (mean, p50)."""
    by_name = {r.name: r for r in report.results}
    return [
        {
            "backend": report.backend,
            "measure": measure,
            "floor": floor,
            "over_floor_mean": round(by_name[measure].mean_ms / by_name[floor].mean_ms, 3),
            "over_floor_p50": round(
                by_name[measure].percentile_ms(50) / by_name[floor].percentile_ms(50), 3
            ),
            "target": TARGET if (measure, floor) == (OVERHEAD, "floor") else None,
        }
        for measure in (OVERHEAD, MODEL_FREE, "harness")
        for floor in MEASUREMENTS[1:]
    ]


def print_shapes(reports: list[BackendReport], runs: int, question: str) -> None:
    """The question, the rounds, and what one run and its floors write on each backend."""
    print()
    print(f"question: {question!r}")
    print(
        f"runs per measurement and backend: {runs} after {WARM_UP} warm-up runs; {ROUNDS} "
        "interleaved rounds"
    )
    for rep in reports:
        print(f"model: {rep.model}, {rep.model_calls:g} model calls per measured run")
        print(f"one run on {rep.backend}: {rep.shape.summary()}")
        gets, events = rep.floor_reads
        print(
            f"  floor replays it: {len(rep.shape.transactions)} transactions, {rep.shape.events} "
            f"bare events on {rep.shape.streams} streams, {rep.floor_state_bytes} bytes of stored "
            f"state; floor+get adds {gets} repository.get rebuilding {events} events"
        )


def print_table(reports: list[BackendReport]) -> None:
    """One row per backend and measurement: mean, p50 and p95 milliseconds per run."""
    header = (
        f"{'backend':8}  {'measure':13}  {'runs':>5}  {'mean ms':>8}  {'p50 ms':>8}  {'p95 ms':>8}"
    )
    print(header)
    print("-" * len(header))
    for rep in reports:
        for r in rep.results:
            print(
                f"{r.backend:8}  {r.name:13}  {len(r.seconds):5d}  {r.mean_ms:8.2f}  "
                f"{r.percentile_ms(50):8.2f}  {r.percentile_ms(95):8.2f}"
            )


def print_ratios(computed: list[dict[str, Any]]) -> None:
    """Every ratio, with the verdict on the one that has a target."""
    print()
    print(f"target: ({OVERHEAD}) / floor <= {TARGET}; the other ratios are context")
    for ratio in computed:
        met = ""
        if ratio["target"] is not None:
            met = f" ({verdict(ratio['over_floor_mean'] <= ratio['target'], 'ABOVE')})"
        print(
            f"{ratio['backend']:8}  {ratio['measure'] + '/' + ratio['floor']:27} "
            f"mean {ratio['over_floor_mean']:7.3f}  p50 {ratio['over_floor_p50']:7.3f}{met}"
        )


def shape_line(rep: BackendReport) -> dict[str, Any]:
    """One backend's shape (and its floor's) as a JSON object."""
    return {
        "kind": "shape",
        "backend": rep.backend,
        "model": rep.model,
        "model_calls": rep.model_calls,
        "transactions": len(rep.shape.transactions),
        "events": rep.shape.events,
        "streams": rep.shape.streams,
        "state_bytes": rep.shape.state_bytes,
        "floor_state_bytes": rep.floor_state_bytes,
        "floor_get_reads": rep.floor_reads[0],
        "floor_get_events_read": rep.floor_reads[1],
        "aggregate_reads": rep.shape.aggregate_reads,
        "stream_selects": rep.shape.stream_selects,
        "events_read": rep.shape.events_read,
        "sql_statements": rep.shape.sql_statements,
        "outcome": rep.shape.outcome,
    }


def report(reports: list[BackendReport], runs: int, question: str) -> None:
    """The shape, the aligned table, the ratios, then JSON lines."""
    print_shapes(reports, runs, question)
    print_table(reports)
    computed = [ratio for rep in reports for ratio in ratios(rep)]
    print_ratios(computed)
    print()
    print_json(shape_line(rep) for rep in reports)
    print_json(r.json_line() for rep in reports for r in rep.results)
    print_ratios_json(computed)
