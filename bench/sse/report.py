"""The latency report: the setup, the aligned table, the ratios with the verdict, JSON lines."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.common import PG_HOST, PG_PORT, percentile, print_json, print_ratios_json, verdict
from bench.sse import QUESTION, TARGET, WARM_UP_RUNS

if TYPE_CHECKING:
    from bench.sse.measure import Results


@dataclass(frozen=True)
class Row:
    """One line of the table: a measure's samples in seconds."""

    name: str
    description: str
    seconds: tuple[float, ...]

    def ms(self, p: float) -> float:
        """A percentile in milliseconds."""
        return 1000 * percentile(self.seconds, p)


DONE_DELAY, NOTIFY = "done delay", "NOTIFY round trip"


def rows(results: Results) -> list[Row]:
    """The done delays, their breakdown per run, and the reference."""
    runs = [r for r in results.runs if r.arrivals]
    projected = [(r, r.projected) for r in runs if r.projected is not None]
    return [
        Row(
            DONE_DELAY, "RUN_FINISHED appended -> done read, every observer", tuple(results.delays)
        ),
        Row(
            "  appended->first",
            "-> the first observer read done, per run",
            tuple(min(r.arrivals) - r.appended for r in runs),
        ),
        Row(
            "  first->last",
            "the fan-out: first to last observer's done, per run",
            tuple(max(r.arrivals) - min(r.arrivals) for r in runs),
        ),
        Row(
            "appended->projected",
            "-> the feed's table has it (streams need not wait for it), per run",
            tuple(at - r.appended for r, at in projected),
        ),
        Row(NOTIFY, "raw LISTEN/NOTIFY, send -> listening thread has it", tuple(results.notifies)),
    ]


def print_setup(setup: dict[str, Any], results: Results) -> None:
    """What was served, run and observed."""
    frames: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    for run in results.runs:
        frames.update(run.frames)
        outcomes.update(run.outcomes)
    measured = len(results.runs) * setup["observers"]
    print()
    print(
        f"setup: PostgreSQL {setup['postgres']} at {PG_HOST}:{PG_PORT}, {setup['cpus']} CPUs, "
        f"one uvicorn worker (loop {setup['loop']}, http {setup['http']}) in this process; "
        "projections in-process; the offline model"
    )
    print(
        f"question: {QUESTION!r}; {len(results.runs)} measured runs after {WARM_UP_RUNS} warm-up "
        f"runs, {setup['observers']} observers each (asyncio, client {setup['client']}, one "
        f"connection each) in {setup['observers_in']}"
    )
    print(
        f"frames read by all observers: {dict(frames)}; done outcomes {dict(outcomes)}; "
        f"{measured - len(results.delays)} of {measured} done missing"
    )
    connect = [r.connect_s for r in results.runs]
    short = sum(1 for r in results.runs if r.connected < setup["observers"])
    print(
        f"observers connected (all had metadata) in p50 {percentile(connect, 50):.2f} s, "
        f"max {max(connect):.2f} s, then the run's first model call was let through; "
        f"runs with observers missing at that point: {short}"
    )


def print_table(table: list[Row]) -> None:
    """The aligned table."""
    header = f"{'measure':22}  {'samples':>7}  {'p50 ms':>8}  {'p99 ms':>8}  {'max ms':>8}  what"
    print()
    print(header)
    print("-" * len(header))
    for row in table:
        if not row.seconds:
            print(f"{row.name:22}  {0:7d}  {'n/a':>8}")
            continue
        print(
            f"{row.name:22}  {len(row.seconds):7d}  {row.ms(50):8.2f}  {row.ms(99):8.2f}  "
            f"{1000 * max(row.seconds):8.2f}  {row.description}"
        )


def ratios(table: list[Row]) -> list[dict[str, Any]]:
    """p99 and p50 of the done delay over the NOTIFY round trip's."""
    by_name = {row.name: row for row in table}
    done, notify = by_name[DONE_DELAY], by_name[NOTIFY]
    if not (done.seconds and notify.seconds):
        return []
    return [
        {
            "measure": DONE_DELAY,
            "reference": NOTIFY,
            "percentile": p,
            "ratio": round(done.ms(p) / notify.ms(p), 2),
            "target_max": TARGET if p == 99 else None,
        }
        for p in (99, 50)
    ]


def print_ratios(computed: list[dict[str, Any]]) -> None:
    """The ratios, with the verdict on p99."""
    print()
    print(f"target: p99({DONE_DELAY}) <= {TARGET:g}x p99({NOTIFY}); the p50 ratio is context")
    for ratio in computed:
        met = "  (context)"
        if ratio["target_max"] is not None:
            ok = ratio["ratio"] <= ratio["target_max"]
            met = f"  target <= {TARGET:g}x ({verdict(ok, 'ABOVE')})"
        print(
            f"p{ratio['percentile']}({DONE_DELAY}) / p{ratio['percentile']}({NOTIFY}) = "
            f"{ratio['ratio']:8.2f}x{met}"
        )


def latency_line(row: Row) -> dict[str, Any]:
    """One row of the table as a JSON object."""
    return {
        "kind": "latency",
        "measure": row.name.strip(),
        "samples": len(row.seconds),
        "p50_ms": round(row.ms(50), 3),
        "p99_ms": round(row.ms(99), 3),
        "max_ms": round(1000 * max(row.seconds), 3),
    }


def report(setup: dict[str, Any], results: Results) -> None:
    """The setup, the aligned table, the ratios with the verdict, then JSON lines."""
    table = rows(results)
    computed = ratios(table)
    print_setup(setup, results)
    print_table(table)
    print_ratios(computed)
    print()
    print_json([{"kind": "setup", **setup}, *(latency_line(row) for row in table if row.seconds)])
    print_ratios_json(computed)
