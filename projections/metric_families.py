"""The metric families ``GET /metrics`` serves: names, types, help, labels and buckets.

Shared by the metrics projection (which counts into them) and the API's collector (which serves
them). Names follow the Prometheus conventions: a ``harness_`` prefix, ``_total`` for counters,
base units (``_seconds``) for durations. Histograms are counted in integer milli- or
microseconds so that every stored value is exact; ``scale`` turns them into seconds when served.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Literal

Kind = Literal["counter", "histogram", "gauge"]


@dataclass(frozen=True)
class Family:
    """One metric family: its name as served (counters without ``_total``), type and help."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    bounds: tuple[int, ...] = ()
    """A histogram's bucket upper bounds in stored units, ascending (+Inf is implied)."""
    scale: int = 1
    """Stored units per served unit (1000: stored in milliseconds, served in seconds)."""


RUNS_STARTED = Family("harness_runs_started", "counter", "Runs started.")
RUNS = Family(
    "harness_runs",
    "counter",
    "Runs finished, by intent, release outcome, fallback type and termination state.",
    ("intent", "release_outcome", "fallback_type", "termination_state"),
)
RUN_DURATION = Family(
    "harness_run_duration_seconds",
    "histogram",
    "Duration of finished runs (RUN_FINISHED's duration), by release outcome.",
    ("release_outcome",),
    (100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000),
    scale=1_000,
)
FIRST_EVENT = Family(
    "harness_run_time_to_first_event_seconds",
    "histogram",
    "Time from a run's start to the first event its stream sends after the metadata (a status,"
    " its termination or its end).",
    (),
    (5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 10_000_000),
    scale=1_000_000,
)
TOOL_INVOCATIONS = Family(
    "harness_tool_invocations",
    "counter",
    "Tool invocations that ended, by tool, origin (builtin, mcp:SERVER, plugin:NAME) and status"
    " (READY or ERROR).",
    ("tool", "origin", "status"),
)
TOOL_DURATION = Family(
    "harness_tool_call_duration_seconds",
    "histogram",
    "Duration of tool invocations that ended (their start to their result or failure), by tool"
    " and origin.",
    ("tool", "origin"),
    (1_000, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
     5_000_000, 10_000_000, 30_000_000),
    scale=1_000_000,
)  # fmt: skip
PREFLIGHT_REJECTIONS = Family(
    "harness_preflight_rejections",
    "counter",
    "Tool requests rejected at preflight, by code (never invoked).",
    ("code",),
)
GUARD_VERDICTS = Family(
    "harness_guard_verdicts",
    "counter",
    "Guard verdicts: evidence (initial check) and evidence_recheck VALID or INVALID; semantic"
    " SUPPORTED, UNSUPPORTED or UNAVAILABLE.",
    ("guard", "verdict"),
)
MODEL_CALLS = Family(
    "harness_model_calls",
    "counter",
    "Model calls, by model (as configured), purpose and outcome.",
    ("model", "purpose", "outcome"),
)
MODEL_DURATION = Family(
    "harness_model_call_duration_seconds",
    "histogram",
    "Duration of model calls (retries and their waits included), by model and purpose.",
    ("model", "purpose"),
    (50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000),
    scale=1_000,
)
MODEL_TOKENS = Family(
    "harness_model_tokens",
    "counter",
    "Model tokens, by model and direction (input or output).",
    ("model", "direction"),
)

LOG_FAMILIES = (
    RUNS_STARTED,
    RUNS,
    RUN_DURATION,
    FIRST_EVENT,
    TOOL_INVOCATIONS,
    TOOL_DURATION,
    PREFLIGHT_REJECTIONS,
    GUARD_VERDICTS,
    MODEL_CALLS,
    MODEL_DURATION,
    MODEL_TOKENS,
)
"""The families counted from the log by the metrics projection, in the order they are served."""

RUNS_IN_PROGRESS = Family(
    "harness_runs_in_progress", "gauge", "Runs started and not finished (from the log)."
)
PROJECTION_LAG = Family(
    "harness_projection_lag",
    "gauge",
    "Log positions a projection has not applied yet (the log's head minus its position).",
    ("projection",),
)
ADMISSION_REFUSALS = Family(
    "harness_admission_refusals",
    "counter",
    "Requests refused because the worker ran its maximum of concurrent runs (HTTP 429).",
)
SSE_STREAMS = Family("harness_sse_streams_open", "gauge", "Event streams open now.")
SSE_STREAMS_BY_KEY = Family(
    "harness_sse_streams_open_by_key",
    "gauge",
    "Event streams open now, by the name of the API key they are sent to.",
    ("key",),
)
LIMITS = (
    Family(
        "harness_runs_limit",
        "gauge",
        "Runs one worker executes at once (HARNESS_MAX_CONCURRENT_RUNS).",
    ),
    Family(
        "harness_runs_per_key_limit",
        "gauge",
        "Runs one API key may execute at once on a worker (HARNESS_MAX_RUNS_PER_KEY, or as it"
        " defaults; the worker's limit when there is none of its own).",
    ),
    Family(
        "harness_sse_streams_limit",
        "gauge",
        "Event streams one worker sends at once (HARNESS_MAX_STREAMS).",
    ),
    Family(
        "harness_sse_streams_per_key_limit",
        "gauge",
        "Event streams one API key may have open at once on a worker"
        " (HARNESS_MAX_STREAMS_PER_KEY, or as it defaults; the worker's limit when there is none"
        " of its own).",
    ),
)
"""A worker's admission limits, as configured (the same in every worker)."""

BUILD_INFO = Family(
    "harness_build_info",
    "gauge",
    "Always 1: the harness's version and the Python it runs on, as labels.",
    ("version", "python"),
)
HTTP_REQUESTS = Family(
    "harness_http_requests",
    "counter",
    "HTTP requests answered, by method, route (its template, e.g. /v1/runs/{run_id}; other for"
    " a path no route has) and status code.",
    ("method", "route", "status"),
)
HTTP_DURATION = Family(
    "harness_http_request_duration_seconds",
    "histogram",
    "Time from a request's arrival to its response's start (for an event stream: its headers),"
    " by method and route.",
    ("method", "route"),
    (5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000),
    scale=1_000,
)

TOTAL = "total"
"""The ``part`` of a counter's row."""
SUM = "sum"
"""The ``part`` of a histogram's sum row; its bucket rows' part is the bound (or ``+Inf``)."""
INF = "+Inf"


def bucket_part(family: Family, value: int) -> str:
    """The ``part`` of the (non-cumulative) bucket ``value`` falls in (the first bound >= it)."""
    parts = _PARTS.get(family.name)
    if parts is None:
        parts = _PARTS[family.name] = (*map(str, family.bounds), INF)
    return parts[bisect_left(family.bounds, value)]


_PARTS: dict[str, tuple[str, ...]] = {}
"""Each histogram's bucket parts, its bounds as text then ``+Inf`` (made once)."""
