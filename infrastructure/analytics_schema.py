"""The ``analytics_*`` views as data: each view's name, table, columns, kinds and meanings.

``infrastructure.analytics_views`` makes SQL of them for each store and documents them;
``harness analytics export`` writes one file per view with these columns in this order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["text", "integer", "real", "boolean", "timestamp", "day"]


@dataclass(frozen=True)
class ViewColumn:
    """One column of a view: its name, kind, meaning and, if renamed, its table column."""

    name: str
    kind: Kind
    meaning: str
    source: str = ""


@dataclass(frozen=True)
class AnalyticsView:
    """One view: its name, the read table it selects from, its columns and their order."""

    name: str
    table: str
    meaning: str
    columns: tuple[ViewColumn, ...]
    order: tuple[str, ...]
    """The columns the export sorts its rows by (a unique key)."""


def _c(spec: str, meaning: str, source: str = "") -> ViewColumn:
    name, kind = spec.split(":")
    return ViewColumn(name, kind, meaning, source)  # type: ignore[arg-type]


RUN_DAY = "run_day"
"""The computed ``day`` of ``analytics_runs``: the UTC day the run was created."""
_DAY = _c("day:day", "The UTC day of the event that made the row (YYYY-MM-DD).")
_RUN = _c("run_id:text", "The run.")
_POSITION = _c("position:integer", "The log position of the event that made the row.")
_AT = _c("at:timestamp", "When the event was recorded (UTC).")
_OUTCOME_KEY = "'' stands for none."


def _runs() -> AnalyticsView:
    return AnalyticsView(
        "analytics_runs",
        "diagnosis_run",
        "One row per run (not its question or answer texts); day is the day it was created.",
        (
            _RUN,
            _c("session_id:text", "The session."),
            _c("owner:text", "The name of the API key that started it."),
            _c("intent:text", "SYSTEM_CHAT, KNOWLEDGE_QUERY, DIAGNOSIS; null if never routed."),
            _c("status:text", "RUNNING, SUCCESS, FAILED or CANCELLED (SPEC §12)."),
            _c("release_outcome:text", "SUCCESS, FALLBACK, FAILED, CANCELLED; null if open."),
            _c("fallback_type:text", "Why a fallback was published; null otherwise."),
            _c("termination_state:text", "The RunState it ended in."),
            _c("termination_reason:text", "The cancellation reason, failure code or COMPLETED."),
            _c("stop_reason:text", "Why the agent stopped calling tools; null if it did not."),
            _c("created_at:timestamp", "When it started."),
            _c("finished_at:timestamp", "When it finished; null while open."),
            _c("duration_ms:integer", "Start to finish; null while open."),
            _c("tokens_in:integer", "Input tokens of all its model calls."),
            _c("tokens_out:integer", "Output tokens of all its model calls."),
            _c("model_calls:integer", "Model calls."),
            _c("agent_steps:integer", "Model calls of the agent loop."),
            _c("tool_calls:integer", "Tool calls charged to its budget."),
            _c("rejected_tool_requests:integer", "Tool requests refused at preflight."),
            _c("day:day", "The UTC day it was created.", RUN_DAY),
        ),
        ("run_id",),
    )


def _tool_calls() -> AnalyticsView:
    return AnalyticsView(
        "analytics_tool_calls",
        "analytics_tool_call",
        "One row per tool invocation that ended; day is the day it ended.",
        (
            _c("invocation_id:text", "The invocation (its stream id).", "stream_id"),
            _RUN,
            _c("tool:text", "The tool's name."),
            _c("origin:text", "builtin, plugin:NAME or mcp:SERVER."),
            _c("started_at:timestamp", "When it began."),
            _c("finished_at:timestamp", "When it ended."),
            _c("duration_ms:integer", "Begin to end."),
            _c("state:text", "READY or ERROR."),
            _c("evidence_status:text", "EVIDENCE_FOUND, NO_EVIDENCE or ERROR."),
            _c("error_code:text", "The failure's code ('' when READY)."),
            _c("error_type:text", "The failure's class as the tool's source said it ('')."),
            _c("result_bytes:integer", "Bytes of the projected result (0 when ERROR)."),
            _DAY,
            _POSITION,
        ),
        ("invocation_id",),
    )


def _model_calls() -> AnalyticsView:
    return AnalyticsView(
        "analytics_model_calls",
        "analytics_model_call",
        "One row per model call (AGENT_MODEL_STEP).",
        (
            _POSITION,
            _RUN,
            _c("step:integer", "The event's version in its run's stream (orders a run's calls)."),
            _AT,
            _c("purpose:text", "ROUTE, ANSWER, AGENT, REPAIR or JUDGE."),
            _c("provider:text", "The model provider ('' before it was recorded)."),
            _c("model:text", "The model requested."),
            _c("response_model:text", "The model that answered, as the provider named it."),
            _c("service_tier:text", "The tier the provider said it used ('' if none)."),
            _c("outcome:text", "The call's outcome (OK or why it failed)."),
            _c("error_type:text", "The failure's class: timeout, an HTTP status ('' if none)."),
            _c("finish_reason:text", "Why the model stopped, as it said."),
            _c("tokens_in:integer", "Input tokens."),
            _c("tokens_out:integer", "Output tokens."),
            _c("latency_ms:integer", "Time to the answer, retries included."),
            _c("retries:integer", "Failed attempts that were tried again."),
            _DAY,
        ),
        ("position",),
    )


def _guard_decisions() -> AnalyticsView:
    return AnalyticsView(
        "analytics_guard_decisions",
        "analytics_guard_decision",
        "One row per guard step and release decision.",
        (
            _POSITION,
            _RUN,
            _AT,
            _c("stage:text", "The event: EVIDENCE_GUARD_INITIAL, …, RELEASE_DECISION."),
            _c(
                "verdict:text",
                "VALID/INVALID, REPAIRED, SUPPORTED/UNSUPPORTED/UNAVAILABLE, or"
                " the release outcome.",
            ),
            _c("fallback_type:text", "The release's fallback type ('' otherwise)."),
            _c(
                "reason:text",
                "Reason codes: refused citations' problems, why the judge was"
                " unavailable, the fallback type ('' otherwise).",
            ),
            _c("rejected_citations:integer", "Citations the evidence guard refused."),
            _DAY,
        ),
        ("position",),
    )


def _citations() -> AnalyticsView:
    return AnalyticsView(
        "analytics_citations",
        "analytics_citation",
        "Every citation a guard checked: refused ones, and those of the judged statements.",
        (
            _POSITION,
            _c("seq:integer", "Its order in its event."),
            _RUN,
            _c(
                "stage:text",
                "EVIDENCE_GUARD_INITIAL, EVIDENCE_GUARD_RECHECK or SEMANTIC_GUARD_DECISION.",
            ),
            _c(
                "statement:text",
                "conclusion, fact N, progress N; judged N for the judge's Nth"
                " statement (judged 1: the conclusion or the answer's first).",
            ),
            _c("reference:text", "The evidence reference it cites."),
            _c("accepted:boolean", "Whether the evidence guard accepted it."),
            _c("problem:text", "Why it was refused ('' when accepted)."),
            _c("verdict:text", "The judge's verdict on its statement ('' if not judged)."),
            _DAY,
        ),
        ("position", "seq"),
    )


def _stats(name: str, table: str, meaning: str, key: str, values: str) -> AnalyticsView:
    columns = [_DAY]
    for spec in (*key.split(), *values.split()):
        column = spec.split(":")[0]
        columns.append(_c(spec, _meaning(column)))
    order = ("day", *(spec.split(":")[0] for spec in key.split()))
    return AnalyticsView(name, table, meaning, tuple(columns), order)


def _meaning(column: str) -> str:
    """A stats column's meaning: a percentile's, a key's or a total's."""
    for p, said in (("_p50_ms", "median"), ("_p95_ms", "95th percentile")):
        if column.endswith(p):
            return f"The group's {said} {column.removesuffix(p)} in ms (nearest rank)."
    return _MEANINGS.get(column, f"The group's total {column.replace('_', ' ')}.")


_MEANINGS = {
    "outcome": f"The tool's evidence status, or the model call's outcome. {_OUTCOME_KEY}",
    "error_code": f"The tool's error code. {_OUTCOME_KEY}",
    "error_type": f"The model call's failure class. {_OUTCOME_KEY}",
    "calls": "Calls in the group.",
    "runs": "Finished runs in the group.",
    "tool": "The tool's name.",
    "origin": "builtin, plugin:NAME or mcp:SERVER.",
    "provider": "The model provider.",
    "model": "The model requested.",
    "purpose": "ROUTE, ANSWER, AGENT, REPAIR or JUDGE.",
    "intent": f"The intent. {_OUTCOME_KEY}",
    "release_outcome": "The release outcome.",
    "fallback_type": f"The fallback type. {_OUTCOME_KEY}",
    "termination_state": f"The termination state. {_OUTCOME_KEY}",
}


def _percentiles(stem: str) -> str:
    return f"{stem}_p50_ms:real {stem}_p95_ms:real"


def _daily() -> tuple[AnalyticsView, ...]:
    return (
        _stats(
            "analytics_daily",
            "run_daily",
            "Finished runs per UTC day (of creation) and outcome group.",
            "intent:text release_outcome:text fallback_type:text termination_state:text",
            f"runs:integer {_percentiles('duration')} tokens_in:integer tokens_out:integer",
        ),
        _stats(
            "analytics_tool_stats",
            "tool_stats",
            "Ended tool calls per UTC day and group; p50/p95 of their durations (nearest rank).",
            "tool:text origin:text outcome:text error_code:text",
            f"calls:integer {_percentiles('duration')} result_bytes:integer",
        ),
        _stats(
            "analytics_model_stats",
            "model_stats",
            "Model calls per UTC day and group; p50/p95 of their latencies (nearest rank).",
            "provider:text model:text purpose:text outcome:text error_type:text",
            f"calls:integer {_percentiles('latency')} tokens_in:integer tokens_out:integer",
        ),
    )


VIEWS: tuple[AnalyticsView, ...] = (
    _runs(),
    _tool_calls(),
    _model_calls(),
    _guard_decisions(),
    _citations(),
    *_daily(),
)
"""Every analytics view, in the order they are documented and exported."""
