"""The append report: the aligned table, the ratios against the target, then JSON lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.append import BATCH_AGGREGATES, BATCH_EVENTS, ROUNDS, TARGET
from bench.common import print_json, print_ratios_json, verdict

if TYPE_CHECKING:
    from bench.append.measure import Result


def ratios(results: list[Result]) -> list[dict[str, Any]]:
    """Project / bare eventsourcing and project / raw, per backend and mode."""
    rates = {(r.backend, r.mode, r.writer): r.rate for r in results}
    out: list[dict[str, Any]] = []
    for backend, mode in dict.fromkeys((r.backend, r.mode) for r in results):
        project = rates[(backend, mode, "project")]
        bare = rates[(backend, mode, "bare-es")]
        ratio = {
            "backend": backend,
            "mode": mode,
            "project_over_bare": round(project / bare, 3),
            "project_over_raw": round(project / rates[(backend, mode, "raw")], 3),
            "target_project_over_bare": TARGET,
        }
        ours = rates.get((backend, mode, "bare-1rt"))
        if ours is not None:  # our recorder against the library's, the same bare Application
            ratio["recorder_over_bare"] = round(ours / bare, 3)
        out.append(ratio)
    return out


def print_table(results: list[Result], mean_state: float, events: int) -> None:
    """The workload in one line, then one row per backend, mode and writer."""
    print()
    print(
        f"events per writer and mode: {events}; batch = {BATCH_EVENTS} events from "
        f"{BATCH_AGGREGATES} aggregates per transaction; {ROUNDS} interleaved rounds; "
        f"mean stored state {mean_state:.0f} bytes"
    )
    header = (
        f"{'backend':8}  {'mode':6}  {'writer':8}  {'events':>7}  {'seconds':>8}  "
        f"{'events/s':>9}  {'rounds min-max':>15}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.backend:8}  {r.mode:6}  {r.writer:8}  {r.events:7d}  "
            f"{r.seconds:8.3f}  {r.rate:9.0f}  "
            f"{min(r.round_rates):7.0f}-{max(r.round_rates):<7.0f}".rstrip()
        )
    if any(r.backend == "postgres" for r in results):
        print(
            "postgres: raw has no LOCK TABLE/NOTIFY; project runs with store_environment() "
            "(HARNESS_DB_PRE_PING off by default), bare-es with eventsourcing's defaults, "
            "bare-1rt the same with our one-round-trip recorder"
        )


def print_ratios(computed: list[dict[str, Any]]) -> None:
    """Every ratio, project / bare eventsourcing with its verdict."""
    print()
    print(f"target: project / bare eventsourcing >= {TARGET}")
    for ratio in computed:
        met = verdict(ratio["project_over_bare"] >= TARGET, "BELOW")
        print(
            f"{ratio['backend']:8}  {ratio['mode']:6}  "
            f"project/bare-es {ratio['project_over_bare']:.3f} ({met})  "
            f"project/raw {ratio['project_over_raw']:.3f}"
            + (
                f"  bare-1rt/bare-es {ratio['recorder_over_bare']:.3f}"
                if "recorder_over_bare" in ratio
                else ""
            )
        )


def measurement(r: Result) -> dict[str, Any]:
    """One measurement as a JSON object."""
    return {
        "kind": "append",
        "backend": r.backend,
        "mode": r.mode,
        "writer": r.writer,
        "events": r.events,
        "seconds": round(r.seconds, 4),
        "events_per_s": round(r.rate, 1),
        "round_min_events_per_s": round(min(r.round_rates), 1),
        "round_max_events_per_s": round(max(r.round_rates), 1),
    }


def report(results: list[Result], mean_state: float, events: int) -> None:
    """The aligned table, the ratios, then JSON lines."""
    print_table(results, mean_state, events)
    computed = ratios(results)
    print_ratios(computed)
    print()
    print_json(measurement(r) for r in results)
    print_ratios_json(computed)
