"""The rebuild report: the workload, the aligned table, the ratios with verdicts, JSON lines."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from bench.common import print_json, print_ratios_json, verdict
from bench.projections import (
    CEILING,
    ES_RUNNER,
    MEASUREMENTS,
    OURS,
    PER_EVENT,
    PER_EVENT_ONE,
    REFERENCES,
    TARGETS,
    TURNS_PER_SESSION,
)
from bench.projections.measure import questions
from bench.projections.phases import ROUNDS
from projections.registry import all_projections

if TYPE_CHECKING:
    from bench.projections.measure import BackendReport

COUNT = len(all_projections())
"""How many projections a rebuild applies (the per-event style runs one runner each)."""
ROWS = (*MEASUREMENTS[:3], PER_EVENT_ONE, ES_RUNNER)
"""The measurements in the order of the table."""
DESCRIPTIONS = {
    OURS: "Projector.rebuild(), {count} projections, batch {batch}, whole log (emptying included)",
    CEILING: "select_notifications pages of {batch} + to_domain_event only, whole log",
    PER_EVENT: "{count} runners, 1 per projection, 1 event per transaction, log prefix {prefix}",
    PER_EVENT_ONE: "the same per runner: prefix entries x {count} / summed time (one projection)",
    ES_RUNNER: "eventsourcing ProjectionRunner, tracking-only projection, prefix {prefix}",
}
EXPLANATION = """\
  per-event is the library's ProjectionRunner style reproduced with our projections: each of the
  {count} projections gets its own Projector(batch_size=1), run after emptying its tables and
  tracking (untimed); every log entry is applied in its own transaction together with its
  tracking update (plus, per entry, a read of the tracking row and a 1-entry log read); its
  events/s is the prefix's entries over the summed wall time of the {count} runners, i.e. the
  rate at which all the read models advance.
  es-runner (context, PostgreSQL only: the SQLite recorder has no subscribe()) is one trivial
  library projection writing only its tracking row; compare it with per-event/1, and remember
  that {count} real library projections would need {count} such runners."""


def ratios(rep: BackendReport) -> list[dict[str, Any]]:
    """Targets and context ratios that this backend measured."""
    found: list[dict[str, Any]] = []
    pairs = [(m, r, t) for m, r, t in TARGETS] + [(m, r, None) for m, r in REFERENCES]
    for measure_name, reference, target in pairs:
        if not (rep.rates(measure_name) and rep.rates(reference)):
            continue
        found.append(
            {
                "backend": rep.backend,
                "measure": measure_name,
                "reference": reference,
                "ratio_median": round(rep.median(measure_name) / rep.median(reference), 3),
                "ratio_best": round(rep.best(measure_name) / rep.best(reference), 3),
                "target_min": target,
            }
        )
    return found


def print_workload(reports: list[BackendReport]) -> None:
    """The question mix, the log each backend got, and what each measurement is."""
    print()
    print(f"question mix per cycle ({TURNS_PER_SESSION} turns per session): {questions()}")
    for rep in reports:
        mix = ", ".join(f"{n} {k}" for k, n in sorted(rep.streams.items()))
        print(
            f"{rep.backend}: {rep.runs} runs filled the log with {rep.entries} entries ({mix}) in "
            f"{rep.fill_seconds:.1f} s; outcomes {rep.outcomes}"
        )
    print()
    print("what is measured (events/s = log entries processed / wall seconds):")
    prefix = "/".join(str(r.prefix) for r in reports)
    batch = "/".join(str(r.batch) for r in reports)
    for name in ROWS:
        described = DESCRIPTIONS[name].format(batch=batch, prefix=prefix, count=COUNT)
        print(f"  {name:13}  {described}")
    print(EXPLANATION.format(count=COUNT))


def print_table(reports: list[BackendReport]) -> None:
    """The aligned table: best and median events/s per backend and measurement."""
    header = (
        f"{'backend':8}  {'measure':13}  {'entries':>7}  {'repeats':>7}  {'best ev/s':>10}  "
        f"{'median ev/s':>11}  {'median s':>8}"
    )
    print()
    print(header)
    print("-" * len(header))
    for rep in reports:
        for name in ROWS:
            got = rep.samples.get(PER_EVENT if name == PER_EVENT_ONE else name)
            if not got:
                print(f"{rep.backend:8}  {name:13}  {'n/a':>7}")
                continue
            seconds = statistics.median(s.seconds for s in got)
            print(
                f"{rep.backend:8}  {name:13}  {got[0].entries:7d}  {len(got):7d}  "
                f"{rep.best(name):10.0f}  {rep.median(name):11.0f}  {seconds:8.2f}"
            )


def print_parts(reports: list[BackendReport]) -> None:
    """The per-event style split by projection."""
    print()
    print("per-event, by projection (median events/s of that runner alone):")
    for rep in reports:
        per = rep.samples[PER_EVENT]
        parts = ", ".join(
            f"{name} {statistics.median(s.entries / s.parts[name] for s in per):.0f}"
            for name in per[0].parts
        )
        print(f"  {rep.backend:8}  {parts}")


def print_ratios(computed: list[dict[str, Any]]) -> None:
    """Every ratio, with a verdict where it has a target."""
    print()
    print(
        "targets (verdict on the median; best beside it): "
        + "; ".join(f"{m} >= {t}x {r}" for m, r, t in TARGETS)
    )
    for ratio in computed:
        target = ratio["target_min"]
        met = "  (context)"
        if target is not None:
            met = f"  target >= {target}x ({verdict(ratio['ratio_median'] >= target, 'BELOW')})"
        print(
            f"{ratio['backend']:8}  {ratio['measure'] + ' / ' + ratio['reference']:27} "
            f"median {ratio['ratio_median']:8.3f}x  best {ratio['ratio_best']:8.3f}x{met}"
        )


def print_cpu(reports: list[BackendReport]) -> None:
    """ours / ceiling by this process's CPU seconds: steadier than wall time on a busy machine.

    Context only: on PostgreSQL the server's work for ours is not in it.
    """
    print()
    print("by this process's CPU (context; median CPU seconds; PostgreSQL's server not included):")
    for rep in reports:
        ours, ceiling = (statistics.median(s.cpu for s in rep.samples[n]) for n in (OURS, CEILING))
        print(
            f"{rep.backend:8}  ours {ours:6.3f} s  ceiling {ceiling:6.3f} s  "
            f"ours / ceiling {ceiling / ours:6.3f}x"
        )


def print_phases(reports: list[BackendReport]) -> None:
    """Each backend's rebuild in parts (``--phases``), with each part's share of the whole."""
    for rep in reports:
        if rep.phases is None:
            continue
        phases = rep.phases
        print()
        print(
            f"one rebuild in parts, {rep.backend} (median of {ROUNDS}; each batch's end at once,"
            " not behind the next read):"
        )
        for part, seconds in phases.parts.items():
            print(f"  {part:36}  {seconds:7.3f} s  {100 * seconds / phases.total:5.1f} %")
        print(
            f"  {'in all':36}  {phases.total:7.3f} s; the ceiling {phases.ceiling:.3f} s;"
            f" beyond reading / ceiling {phases.beyond_reading:.2f} (1.00 or less at 0.5x)"
        )


def phases_lines(reports: list[BackendReport]) -> list[dict[str, Any]]:
    """One JSON object per backend whose rebuild was taken apart."""
    return [
        {
            "kind": "phases",
            "backend": rep.backend,
            "seconds": {part: round(s, 4) for part, s in rep.phases.parts.items()},
            "total_s": round(rep.phases.total, 4),
            "ceiling_s": round(rep.phases.ceiling, 4),
            "beyond_reading_over_ceiling": round(rep.phases.beyond_reading, 3),
        }
        for rep in reports
        if rep.phases is not None
    ]


def log_line(rep: BackendReport, repeat: int) -> dict[str, Any]:
    """One backend's log and workload as a JSON object."""
    return {
        "kind": "log",
        "backend": rep.backend,
        "runs": rep.runs,
        "entries": rep.entries,
        "streams": rep.streams,
        "outcomes": rep.outcomes,
        "fill_s": round(rep.fill_seconds, 3),
        "per_event_prefix": rep.prefix,
        "batch": rep.batch,
        "repeats": repeat,
    }


def rebuild_lines(rep: BackendReport) -> list[dict[str, Any]]:
    """One JSON object per measurement of one backend."""
    lines = []
    for name, got in rep.samples.items():
        line: dict[str, Any] = {
            "kind": "rebuild",
            "backend": rep.backend,
            "measure": name,
            "entries": got[0].entries,
            "best_events_per_s": round(rep.best(name), 1),
            "median_events_per_s": round(rep.median(name), 1),
            "seconds": [round(s.seconds, 4) for s in got],
        }
        if got[0].cpu:
            line["cpu_seconds"] = [round(s.cpu, 4) for s in got]
        if got[0].parts:
            line["parts_seconds"] = [{k: round(v, 4) for k, v in s.parts.items()} for s in got]
        lines.append(line)
    return lines


def report(reports: list[BackendReport], repeat: int) -> None:
    """The workload, the aligned table, the ratios with verdicts, then JSON lines."""
    print_workload(reports)
    print_table(reports)
    print_parts(reports)
    computed = [ratio for rep in reports for ratio in ratios(rep)]
    print_ratios(computed)
    print_cpu(reports)
    print_phases(reports)
    print()
    print_json(log_line(rep, repeat) for rep in reports)
    print_json(line for rep in reports for line in rebuild_lines(rep))
    print_json(phases_lines(reports))
    print_ratios_json(computed)
