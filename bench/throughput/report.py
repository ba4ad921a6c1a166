"""The throughput report: one row per server, the lock shares, the ratio, then JSON lines."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from bench.common import percentile, print_json, print_ratios_json, verdict
from bench.throughput import LOCK_TARGET, SAMPLE_INTERVAL, TARGET

if TYPE_CHECKING:
    from bench.throughput.measure import Tally

KINDS = ("event_table", "notify", "other")


def line(tally: Tally, clients: int) -> dict[str, Any]:
    """One server's figures as a JSON object."""
    runs = len(tally.durations)
    run_seconds = sum(tally.durations)
    per_run = 1 / runs if runs else 0.0
    return {
        "kind": "throughput",
        "backend": "postgres",
        "workers": tally.workers,
        "clients": clients,
        "runs": runs,
        "seconds": round(tally.seconds, 2),
        "runs_per_s": round(runs / tally.seconds, 2) if tally.seconds else 0.0,
        "p50_ms": round(1000 * percentile(tally.durations, 50), 1) if runs else None,
        "p95_ms": round(1000 * percentile(tally.durations, 95), 1) if runs else None,
        "cpu_ms_per_run_server": round(1000 * tally.server_cpu * per_run, 2),
        "cpu_ms_per_run_postgres": round(1000 * tally.backend_cpu * per_run, 2),
        "cpu_ms_per_run": round(1000 * (tally.server_cpu + tally.backend_cpu) * per_run, 2),
        "cpu_ms_per_run_clients": round(1000 * tally.client_cpu * per_run, 2),
        "server_processes": tally.processes,
        "lock_wait_share": {
            kind: round(tally.waited.get(kind, 0.0) / run_seconds, 4) if run_seconds else 0.0
            for kind in KINDS
        },
        "lock_samples": tally.samples,
        "peak_connections": tally.peak_connections,
        "refused": tally.refused,
        "failed": len(tally.failed),
    }


def print_line(row: dict[str, Any]) -> None:
    """One server's figures, aligned."""
    share = row["lock_wait_share"]
    print(
        f"{row['workers']} worker(s): {row['runs']:5d} runs in {row['seconds']:6.1f} s = "
        f"{row['runs_per_s']:6.2f} runs/s; run p50 {row['p50_ms']} ms p95 {row['p95_ms']} ms; CPU "
        f"per run {row['cpu_ms_per_run']:.1f} ms (server {row['cpu_ms_per_run_server']:.1f}, "
        f"PostgreSQL {row['cpu_ms_per_run_postgres']:.1f}; the clients "
        f"{row['cpu_ms_per_run_clients']:.1f} besides); waiting on the event-table lock "
        f"{100 * share['event_table']:.1f}% of run time, NOTIFY's {100 * share['notify']:.1f}%, "
        f"other locks {100 * share['other']:.1f}%; peak connections {row['peak_connections']}; "
        f"refused {row['refused']}, failed {row['failed']}"
    )


def report(tallies: list[Tally], clients: int, began: float) -> None:
    """The rows, any failures, the ratio of the most workers over one, then JSON lines."""
    print()
    print(f"lock waits sampled every {1000 * SAMPLE_INTERVAL:g} ms from pg_locks")
    rows = [line(tally, clients) for tally in tallies]
    for row, tally in zip(rows, tallies, strict=True):
        print_line(row)
        for failure in sorted(set(tally.failed))[:5]:
            print(f"  failure: {failure}")
    ratios: list[dict[str, Any]] = []
    one = next((row for row in rows if row["workers"] == 1), None)
    for row in rows:
        if one is not None and row["workers"] > 1 and one["runs_per_s"]:
            ratio = round(row["runs_per_s"] / one["runs_per_s"], 3)
            locks = row["lock_wait_share"]["event_table"]
            met = ratio >= TARGET or locks < LOCK_TARGET
            print(
                f"{row['workers']} workers / 1 worker: {ratio:.3f} runs/s (target >= {TARGET}, or "
                f"event-table lock waits < {100 * LOCK_TARGET:g}%: {verdict(met, 'BELOW')})"
            )
            ratios.append(
                {
                    "backend": "postgres",
                    "measure": f"{row['workers']} workers",
                    "over": "1 worker",
                    "runs_per_s": ratio,
                    "target": TARGET,
                }
            )
    print(f"({time.monotonic() - began:.0f} s in all)")
    print()
    print_json(rows)
    print_ratios_json(ratios)
