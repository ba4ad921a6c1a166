"""The analytics read tables: one row per tool call, model call, guard decision and citation.

Fact tables an analyst reads (through the ``analytics_*`` views of
``infrastructure.analytics_views``), and the daily aggregates ``tool_stats`` and
``model_stats`` with the ordered indexes their percentiles are read from by rank (as
``run_daily`` and ``run_duration``). Defined on the read side's one ``MetaData``, so they are
created, fingerprinted, dropped and rebuilt with every other read table. ``day`` is the UTC day
of the event that made the row, as ``YYYY-MM-DD``; '' stands for "none" in a key column.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, DateTime, Float, Integer, String, Table, Text

from infrastructure.read_metadata import metadata

analytics_tool_call = Table(
    "analytics_tool_call",
    metadata,
    Column("stream_id", String(36), primary_key=True),
    Column("run_id", String(36), nullable=False),
    Column("tool", Text, nullable=False),
    Column("origin", Text, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("state", String(16), nullable=False),
    Column("evidence_status", String(16), nullable=False),
    Column("error_code", Text, nullable=False),
    Column("error_type", Text, nullable=False),
    Column("result_bytes", Integer, nullable=False),
    Column("day", String(10), nullable=False, index=True),
    Column("position", BigInteger, nullable=False),
)
"""One row per tool invocation that ended (READY or ERROR), written when it ended."""

analytics_tool_open = Table(
    "analytics_tool_open",
    metadata,
    Column("stream_id", String(36), primary_key=True),
    Column("run_id", String(36), nullable=False),
    Column("tool", Text, nullable=False),
    Column("origin", Text, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
)
"""What an invocation's ending needs of its start, kept only until it ends."""

analytics_model_call = Table(
    "analytics_model_call",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("run_id", String(36), nullable=False),
    Column("step", Integer, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("purpose", String(16), nullable=False),
    Column("provider", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("response_model", Text, nullable=False),
    Column("service_tier", Text, nullable=False),
    Column("outcome", String(24), nullable=False),
    Column("error_type", Text, nullable=False),
    Column("finish_reason", Text, nullable=False),
    Column("tokens_in", Integer, nullable=False),
    Column("tokens_out", Integer, nullable=False),
    Column("latency_ms", Integer, nullable=False),
    Column("retries", Integer, nullable=False),
    Column("day", String(10), nullable=False, index=True),
)
"""One row per ``AGENT_MODEL_STEP``; ``step`` is the event's version in its run's stream."""

analytics_guard_decision = Table(
    "analytics_guard_decision",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("run_id", String(36), nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("stage", String(32), nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("fallback_type", String(40), nullable=False),
    Column("reason", Text, nullable=False),
    Column("rejected_citations", Integer, nullable=False),
    Column("day", String(10), nullable=False, index=True),
)
"""One row per guard step and release decision of a run, in log order."""

analytics_citation = Table(
    "analytics_citation",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("run_id", String(36), nullable=False),
    Column("stage", String(32), nullable=False),
    Column("statement", Text, nullable=False),
    Column("reference", Text, nullable=False),
    Column("accepted", Boolean, nullable=False),
    Column("problem", String(32), nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("day", String(10), nullable=False, index=True),
    sqlite_with_rowid=False,
)
"""Every citation a guard checked: the ones it refused, and the judged statements' ones."""


def _tool_key() -> list[Column[str]]:
    """``tool_stats``' key: UTC day × tool × origin × outcome × error code."""
    return [
        Column("day", String(10), primary_key=True),
        Column("tool", Text, primary_key=True),
        Column("origin", Text, primary_key=True),
        Column("outcome", String(16), primary_key=True),
        Column("error_code", Text, primary_key=True),
    ]


tool_stats = Table(
    "tool_stats",
    metadata,
    *_tool_key(),
    Column("calls", Integer, nullable=False),
    Column("duration_p50_ms", Float, nullable=False),
    Column("duration_p95_ms", Float, nullable=False),
    Column("result_bytes", BigInteger, nullable=False),
    Column("duration_p50_at", String(36)),
    Column("duration_p95_at", String(36)),
)
"""Ended tool invocations per UTC day and group; ``outcome`` is the evidence status. The ``_at``
columns name the invocation at each percentile's rank (``projections.daily_stats``)."""

tool_duration = Table(
    "tool_duration",
    metadata,
    *_tool_key(),
    Column("duration_ms", Integer, primary_key=True, autoincrement=False),
    Column("stream_id", String(36), primary_key=True),
    sqlite_with_rowid=False,
)
"""Every ended invocation's duration under its ``tool_stats`` key, in key, duration and id order."""


def _model_key() -> list[Column[str]]:
    """``model_stats``' key: UTC day × provider × model × purpose × outcome × error class."""
    return [
        Column("day", String(10), primary_key=True),
        Column("provider", Text, primary_key=True),
        Column("model", Text, primary_key=True),
        Column("purpose", String(16), primary_key=True),
        Column("outcome", String(24), primary_key=True),
        Column("error_type", Text, primary_key=True),
    ]


model_stats = Table(
    "model_stats",
    metadata,
    *_model_key(),
    Column("calls", Integer, nullable=False),
    Column("latency_p50_ms", Float, nullable=False),
    Column("latency_p95_ms", Float, nullable=False),
    Column("tokens_in", BigInteger, nullable=False),
    Column("tokens_out", BigInteger, nullable=False),
    Column("latency_p50_at", BigInteger),
    Column("latency_p95_at", BigInteger),
)
"""Model calls per UTC day and group. The ``_at`` columns hold the log position of the call at
each percentile's rank (``projections.daily_stats``)."""

model_latency = Table(
    "model_latency",
    metadata,
    *_model_key(),
    Column("latency_ms", Integer, primary_key=True, autoincrement=False),
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    sqlite_with_rowid=False,
)
"""Every model call's latency under its ``model_stats`` key, in key, latency and position order."""
