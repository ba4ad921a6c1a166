"""What ``GET /metrics`` should say, worked out independently with plain SQL over the read tables.

Each log-derived series as ``(sample name, labels) -> value``: runs from ``diagnosis_run``,
everything else from ``trace_event`` (the audit timeline, one row per event); and the same map
parsed from an exposition with ``prometheus_client.parser``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, select

from infrastructure.read_tables import diagnosis_run, trace_event
from projections.metric_families import (
    FIRST_EVENT,
    LOG_FAMILIES,
    MODEL_DURATION,
    RUN_DURATION,
    TOOL_DURATION,
    Family,
)

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]
LOG_NAMES = {f.name for f in LOG_FAMILIES} | {"harness_runs_in_progress"}
FIRST_TYPES = ("APPLICATION_STATUS_CHANGED", "RUN_TERMINATED", "RUN_FINISHED")


def parse(exposition: str) -> Series:
    """Every sample of an exposition (``_created`` series aside)."""
    found: Series = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if not sample.name.endswith("_created"):
                found[sample.name, frozenset(sample.labels.items())] = sample.value
    return found


def log_derived(series: Series) -> Series:
    """Only the series of the log-derived families."""
    return {key: value for key, value in series.items() if _family(key[0]) in LOG_NAMES}


def _family(sample: str) -> str:
    for suffix in ("_total", "_bucket", "_sum", "_count"):
        if sample.endswith(suffix) and sample.removesuffix(suffix) in LOG_NAMES:
            return sample.removesuffix(suffix)
    return sample


def expected(engine: Engine) -> Series:
    """Every log-derived series as the read tables say."""
    found: Series = {}
    with engine.connect() as connection:
        runs = [dict(r) for r in connection.execute(select(diagnosis_run)).mappings()]
        trace = [dict(r) for r in connection.execute(select(trace_event)).mappings()]
    finished = [r for r in runs if r["release_outcome"] is not None]
    found[_key("harness_runs_started_total")] = len(runs)
    found[_key("harness_runs_in_progress")] = len(runs) - len(finished)
    groups = Counter(
        tuple(
            r[c] or "" for c in ("intent", "release_outcome", "fallback_type", "termination_state")
        )
        for r in finished
    )
    for (intent, outcome, fallback, state), count in groups.items():
        labels = {
            "intent": intent,
            "release_outcome": outcome,
            "fallback_type": fallback,
            "termination_state": state,
        }
        found[_key("harness_runs_total", **labels)] = count
    by_outcome: dict[str, list[int]] = defaultdict(list)
    for r in finished:
        by_outcome[r["release_outcome"]].append(int(r["duration_ms"]))
    for outcome, durations in by_outcome.items():
        found.update(_histogram(RUN_DURATION, durations, release_outcome=outcome))
    found.update(_histogram(FIRST_EVENT, _first_event_waits(trace)))
    found.update(_from_trace(trace))
    found.update(_durations(trace))
    return found


def _key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


def _histogram(family: Family, values: list[int], **labels: str) -> Series:
    """A histogram's samples: cumulative buckets (``le`` in seconds), count and sum."""
    found: Series = {}
    for bound in family.bounds:
        le = str(bound / family.scale)
        found[_key(f"{family.name}_bucket", **labels, le=le)] = sum(v <= bound for v in values)
    found[_key(f"{family.name}_bucket", **labels, le="+Inf")] = len(values)
    found[_key(f"{family.name}_count", **labels)] = len(values)
    found[_key(f"{family.name}_sum", **labels)] = sum(values) / family.scale
    return found


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _first_event_waits(trace: list[dict[str, Any]]) -> list[int]:
    """Microseconds from each run's RUN_STARTED to its first status, termination or end."""
    started: dict[str, datetime] = {}
    first: dict[str, datetime] = {}
    for row in sorted(trace, key=lambda r: r["position"]):
        if row["event_type"] == "RUN_STARTED":
            started[row["run_id"]] = _utc(row["timestamp"])
        elif row["event_type"] in FIRST_TYPES and row["run_id"] not in first:
            first[row["run_id"]] = _utc(row["timestamp"])
    one = datetime(1970, 1, 1, 0, 0, 0, 1) - datetime(1970, 1, 1)
    return [(first[run] - started[run]) // one for run in first if run in started]


def _from_trace(trace: list[dict[str, Any]]) -> Series:
    """Tool invocations, preflight rejections, guard verdicts and model calls, by label."""
    counts: Counter[tuple[str, frozenset[tuple[str, str]]]] = Counter()
    tools = _tools(trace)
    for row in trace:
        kind, attributes = row["event_type"], row["attributes"]
        if kind in ("TOOL_INVOCATION_READY", "TOOL_INVOCATION_FAILED"):
            status = "READY" if kind.endswith("READY") else "ERROR"
            tool, origin, _ = tools[row["stream_id"]]
            labels = {"tool": tool, "origin": origin, "status": status}
            counts[_key("harness_tool_invocations_total", **labels)] += 1
        elif kind == "TOOL_REQUEST_REJECTED":
            counts[_key("harness_preflight_rejections_total", code=attributes["code"])] += 1
        elif kind in ("EVIDENCE_GUARD_INITIAL", "EVIDENCE_GUARD_RECHECK"):
            guard = "evidence" if kind.endswith("INITIAL") else "evidence_recheck"
            verdict = "VALID" if attributes["valid"] else "INVALID"
            counts[_key("harness_guard_verdicts_total", guard=guard, verdict=verdict)] += 1
        elif kind == "SEMANTIC_GUARD_DECISION":
            verdict = attributes["verdict"] or "UNAVAILABLE"
            counts[_key("harness_guard_verdicts_total", guard="semantic", verdict=verdict)] += 1
        elif kind == "AGENT_MODEL_STEP":
            model = attributes["model"]
            labels = {"model": model, "purpose": attributes["purpose"]}
            counts[_key("harness_model_calls_total", **labels, outcome=attributes["outcome"])] += 1
            for direction, tokens in (("input", "tokens_in"), ("output", "tokens_out")):
                key = _key("harness_model_tokens_total", model=model, direction=direction)
                counts[key] += attributes[tokens]
    return dict(counts)


def _tools(trace: list[dict[str, Any]]) -> dict[str, tuple[str, str, datetime]]:
    """Each invocation stream's tool, origin and start."""
    return {
        r["stream_id"]: (r["attributes"]["tool"], r["attributes"]["origin"], _utc(r["timestamp"]))
        for r in trace
        if r["event_type"] == "TOOL_INVOCATION_STARTED"
    }


def _durations(trace: list[dict[str, Any]]) -> Series:
    """The model calls' and the ended tool invocations' durations, as histograms by label."""
    models: dict[tuple[str, str], list[int]] = defaultdict(list)
    tools: dict[tuple[str, str], list[int]] = defaultdict(list)
    started = _tools(trace)
    one = datetime(1970, 1, 1, 0, 0, 0, 1) - datetime(1970, 1, 1)
    for row in trace:
        kind, attributes = row["event_type"], row["attributes"]
        if kind == "AGENT_MODEL_STEP":
            models[attributes["model"], attributes["purpose"]].append(attributes["latency_ms"])
        elif kind in ("TOOL_INVOCATION_READY", "TOOL_INVOCATION_FAILED"):
            tool, origin, began = started[row["stream_id"]]
            tools[tool, origin].append((_utc(row["timestamp"]) - began) // one)
    found: Series = {}
    for (model, purpose), values in models.items():
        found.update(_histogram(MODEL_DURATION, values, model=model, purpose=purpose))
    for (tool, origin), values in tools.items():
        found.update(_histogram(TOOL_DURATION, values, tool=tool, origin=origin))
    return found
