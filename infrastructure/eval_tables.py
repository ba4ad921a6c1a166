"""The read tables of evaluations (``harness eval``): one row per evaluation, one per case.

Projected from the log's ``EVAL_*`` events by ``projections.eval_table``; defined on the read
side's one ``MetaData``, so they are created, rebuilt and compared with the others. Text columns
are unbounded: the log refuses what is too long (``domain.eval_run``), and a column shorter than
the log allows would stop the projection for good.
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Boolean, Column, DateTime, Integer, String, Table, Text

from infrastructure.read_metadata import metadata

eval_run = Table(
    "eval_run",
    metadata,
    Column("eval_id", String(36), primary_key=True),
    Column("suite", Text, nullable=False),
    Column("model", Text, nullable=False, index=True),
    Column("settings", JSON, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False, index=True),
    Column("finished_at", DateTime(timezone=True)),
    Column("cases", Integer, nullable=False),
    Column("scored", Integer, nullable=False),
    Column("correct", Integer, nullable=False),
    Column("fallback", Integer, nullable=False),
    Column("wrong", Integer, nullable=False),
    Column("published_wrong", Integer, nullable=False),
    Column("tokens", BigInteger, nullable=False),
    Column("model_calls", BigInteger, nullable=False),
    Column("latency_ms", BigInteger, nullable=False),
    Column("last_position", BigInteger, nullable=False),
)
"""One evaluation: suite, model, settings, times and totals (counted as its cases are scored)."""

eval_case = Table(
    "eval_case",
    metadata,
    Column("eval_id", String(36), primary_key=True),
    Column("case_id", Text, primary_key=True),
    Column("seq", Integer, nullable=False),
    Column("question", Text, nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("published_wrong", Boolean, nullable=False),
    Column("reasons", JSON, nullable=False),
    Column("run_id", Text),
    Column("state", Text, nullable=False),
    Column("release", Text),
    Column("fallback_type", Text),
    Column("tokens", BigInteger, nullable=False),
    Column("model_calls", BigInteger, nullable=False),
    Column("latency_ms", BigInteger, nullable=False),
)
"""One case of an evaluation, in the order it was scored (``seq`` from 1)."""
