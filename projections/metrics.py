"""``metric_sample``: the counters and histograms of ``GET /metrics``, counted from the log.

One row per series (a counter, a histogram bucket or a histogram's sum), so a scrape reads a few
dozen rows whatever the number of runs; every worker reads the same rows, and they survive
restarts. Each batch adds its counts to the stored rows in the transaction that moves the
tracking row, so a count is applied exactly once, and a rebuild from position 0 gives the same
rows. ``metric_run`` and ``metric_invocation`` keep what a run's or an invocation's ending needs
of its earlier events (intent, fallback, termination; the tool, its origin and start), only
until it ends.

Labels take only bounded values: enum values, the models configured, and the names and origins
of admitted tools (a request for an unknown tool is a preflight rejection, counted by code
alone), so a hostile model cannot grow the number of series.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.tool_invocation import ToolInvocation
from projections.base import Positioned, Written, begun_before, text
from projections.metric_families import (
    FIRST_EVENT,
    GUARD_VERDICTS,
    PREFLIGHT_REJECTIONS,
    RUN_DURATION,
    RUNS,
    RUNS_STARTED,
    SUM,
    TOOL_DURATION,
    TOOL_INVOCATIONS,
    TOTAL,
    Family,
    bucket_part,
)
from projections.metric_steps import model_step

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.view_port import Row, RowCache, ViewWriter

FIRST_EVENTS = (Run.ApplicationStatusChanged, Run.RunTerminated, Run.RunFinished)
"""The events whose first one is a run's first stream event after the metadata."""
COUNTED_ALONE = (
    Run.AgentModelStep,
    Run.ToolRequestRejected,
    Run.EvidenceGuardInitial,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardDecision,
)
"""The Run events counted without anything of their run's earlier events."""
RUN_STATE = (Run.RunStarted, Run.RoutingDecision, Run.ReleaseDecision, *FIRST_EVENTS)
"""The Run events that start, fill in or end a run's ``metric_run`` row (the others count
alone, or not at all: a budget charge, a routing attempt)."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def series_key(family: str, part: str, labels: str) -> str:
    """The primary key of one series' row."""
    return f"{family}|{part}|{labels}"


def label_text(labels: dict[str, str]) -> str:
    """Labels as canonical JSON text (sorted names, no spaces)."""
    return json.dumps(labels, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


Labels = tuple[tuple[str, str], ...]


class Samples:
    """One batch's additions to ``metric_sample``, by series, written once at the end.

    Labels are kept as they come (their items) and written as text once per series at the end.
    """

    def __init__(self) -> None:
        """Start with nothing added."""
        self.added: dict[tuple[str, str, Labels], int] = defaultdict(int)

    def count(self, family: Family, labels: dict[str, str], amount: int = 1) -> None:
        """Add ``amount`` to a counter."""
        self.added[family.name, TOTAL, tuple(labels.items())] += amount

    def observe(self, family: Family, labels: dict[str, str], value: int) -> None:
        """Count one observation of ``value`` (stored units) into a histogram."""
        items = tuple(labels.items())
        self.added[family.name, bucket_part(family, value), items] += 1
        self.added[family.name, SUM, items] += value

    def flush(self, view: ViewWriter) -> int:
        """Add the counts to the stored rows; how many rows were written."""
        keys: dict[str, tuple[str, str, str]] = {}
        amounts: dict[str, int] = defaultdict(int)
        for (family, part, items), amount in self.added.items():
            added = (family, part, label_text(dict(items)))
            key = series_key(*added)
            keys[key] = added
            amounts[key] += amount
        rows = view.rows("metric_sample", "series")
        rows.preload(keys)
        for key, (family, part, labels) in keys.items():
            row = rows.get(key) or rows.add(
                {"series": key, "family": family, "part": part, "labels": labels, "value": 0}
            )
            row["value"] += amounts[key]
        return rows.flush()


def microseconds(moment: datetime) -> int:
    """``moment`` in whole microseconds since the epoch (exact)."""
    return (moment - EPOCH) // _MICROSECOND


_MICROSECOND = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - EPOCH


class Metrics:
    """Counts runs, tools, guards and model use into ``metric_sample``."""

    name = "metrics"
    tables = ("metric_sample", "metric_run", "metric_invocation")
    interests = (*COUNTED_ALONE, *RUN_STATE, ToolInvocation.Event)

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        """Count the batch's events, then drop the state of the runs and invocations that ended."""
        runs = view.rows("metric_run", "run_id")
        tools = view.rows("metric_invocation", "stream_id")
        runs.preload(begun_before(events, Run.Event, Run.RunStarted))
        tools.preload(
            begun_before(events, ToolInvocation.Event, ToolInvocation.ToolInvocationStarted)
        )
        samples, ended_runs, ended_tools = Samples(), [], []
        for _, event, stream in events:
            if isinstance(event, Run.Event):
                if _run_event(runs, samples, event, stream) and runs.drop(stream):
                    ended_runs.append((stream,))
            elif _invocation_event(tools, samples, event, stream) and tools.drop(stream):
                ended_tools.append((stream,))
        # a run or invocation that started and ended in this batch is never written at all
        written = runs.flush() + tools.flush()
        view.delete("metric_run", ("run_id",), ended_runs)
        view.delete("metric_invocation", ("stream_id",), ended_tools)
        return Written(written + samples.flush(view))


def _run_event(runs: RowCache, samples: Samples, event: Run.Event, run_id: str) -> bool:
    """Count one Run event; whether the run finished with it."""
    if isinstance(event, COUNTED_ALONE):
        _count_alone(samples, event)
        return False
    if isinstance(event, Run.RunStarted):
        samples.count(RUNS_STARTED, {})
        runs.add(_new_run(run_id, event))
        return False
    row = runs.get(run_id)
    if row is None:
        return False  # the run's start was never seen: nothing to attach this to
    if isinstance(event, FIRST_EVENTS) and not row["first_seen"]:
        row["first_seen"] = True
        samples.observe(FIRST_EVENT, {}, microseconds(event.timestamp) - row["started_us"])
    match event:
        case Run.RoutingDecision():
            row["intent"] = text(event.intent)
        case Run.ReleaseDecision():
            row["fallback_type"] = text(event.fallback_type)
        case Run.RunTerminated():
            row["termination_state"] = text(event.state)
        case Run.RunFinished():
            _finish(samples, row, event)
            return True
        case _:
            pass
    return False


def _count_alone(samples: Samples, event: Run.Event) -> None:
    """Count one of the :data:`COUNTED_ALONE` events."""
    match event:
        case Run.AgentModelStep():
            model_step(samples.added, event)
        case Run.ToolRequestRejected():
            samples.count(PREFLIGHT_REJECTIONS, {"code": _v(event.code)})
        case Run.EvidenceGuardInitial():
            samples.count(GUARD_VERDICTS, {"guard": "evidence", "verdict": _valid(event.valid)})
        case Run.EvidenceGuardRecheck():
            labels = {"guard": "evidence_recheck", "verdict": _valid(event.valid)}
            samples.count(GUARD_VERDICTS, labels)
        case Run.SemanticGuardDecision():
            verdict = "UNAVAILABLE" if event.verdict is None else _v(event.verdict)
            samples.count(GUARD_VERDICTS, {"guard": "semantic", "verdict": verdict})
        case _:
            pass


def _finish(samples: Samples, row: Row, event: Run.RunFinished) -> None:
    """Count a finished run as ``diagnosis_run`` records it (a fallback only when published)."""
    outcome = event.release_outcome
    fallback = row["fallback_type"] if outcome is ReleaseOutcome.FALLBACK else None
    labels = {
        "intent": row["intent"] or "",
        "release_outcome": outcome.value,
        "fallback_type": fallback or "",
        "termination_state": row["termination_state"] or "",
    }
    samples.count(RUNS, labels)
    samples.observe(RUN_DURATION, {"release_outcome": outcome.value}, int(event.duration_ms))


def _invocation_event(
    tools: RowCache, samples: Samples, event: ToolInvocation.Event, stream: str
) -> bool:
    """Count one ToolInvocation event; whether the invocation ended with it."""
    if isinstance(event, ToolInvocation.ToolInvocationStarted):
        started = microseconds(event.timestamp)
        tools.add(
            {"stream_id": stream, "tool": event.tool, "origin": event.origin, "started_us": started}
        )
        return False
    ended = isinstance(
        event, ToolInvocation.ToolInvocationReady | ToolInvocation.ToolInvocationFailed
    )
    row = tools.get(stream) if ended else None
    if row is None:
        return False
    status = "READY" if isinstance(event, ToolInvocation.ToolInvocationReady) else "ERROR"
    labels = {"tool": row["tool"], "origin": row["origin"]}
    samples.count(TOOL_INVOCATIONS, labels | {"status": status})
    samples.observe(TOOL_DURATION, labels, microseconds(event.timestamp) - row["started_us"])
    return True


def _new_run(run_id: str, event: Run.RunStarted) -> Row:
    return {
        "run_id": run_id,
        "started_us": microseconds(event.timestamp),
        "first_seen": False,
        "intent": None,
        "fallback_type": None,
        "termination_state": None,
    }


def _v(value: Any) -> str:
    """An enum's value as a label value (``_value_``: the same, without a descriptor call)."""
    return str(value._value_)


def _valid(valid: bool) -> str:
    return "VALID" if valid else "INVALID"
