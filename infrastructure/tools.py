"""Built-in read-only tools over the ops tables: logs, metrics, deployments and alerts.

Each satisfies the ``Tool`` port: ``normalize_scope`` validates and canonicalises the arguments
(see ``infrastructure.ops_scope``), ``run`` returns one compact line per record in time order, or no
lines when the scope holds nothing (the harness then records NO_EVIDENCE for exactly that scope).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, String, bindparam

from infrastructure.ops_data import ops_alerts, ops_deployments, ops_logs, ops_metrics
from infrastructure.ops_scope import (
    LOG_LEVELS,
    OpsScope,
    ScopeRules,
    parse_contains,
    parse_level,
    parse_metric,
    utc_text,
)
from infrastructure.ops_tool import (
    DEFAULT_MAX_RESULT_BYTES,
    LIKE_ESCAPE,
    OPS_READ_SCOPE,
    OpsTool,
    literal_pattern,
    scope_schema,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine, Row

    from application.ports import Tool

__all__ = ["DEFAULT_MAX_RESULT_BYTES", "OPS_READ_SCOPE", "builtin_tools"]


class SearchLogs(OpsTool):
    """Log lines of one service in a time window, optionally of one level or containing text."""

    name = "search_logs"
    description = (
        "Search one service's logs in a time window [start, end). Optional: level (exact), "
        "contains (case-insensitive text), limit. One line per log record, earliest first."
    )
    rules = ScopeRules(
        tool="search_logs",
        service_required=True,
        filters={"level": parse_level, "contains": parse_contains},
        default_limit=50,
    )
    parameters = scope_schema(
        rules,
        level={"type": "string", "enum": list(LOG_LEVELS), "description": "Only this level."},
        contains={"type": "string", "maxLength": 200, "description": "Text the message contains."},
    )
    table = ops_logs

    def query(self, scope: OpsScope) -> Select[Any]:
        """Add the level and text filters."""
        query = super().query(scope)
        if scope.get("level") is not None:
            query = query.where(self.table.c.level == bindparam("level"))
        if scope.get("contains") is not None:
            pattern = bindparam("contains", type_=String)
            query = query.where(self.table.c.message.icontains(pattern, escape=LIKE_ESCAPE))
        return query

    def values(self, scope: OpsScope) -> dict[str, Any]:
        """Add the level, and the text with ``%``, ``_`` and the escape character escaped."""
        values = super().values(scope)
        level, contains = scope.get("level"), scope.get("contains")
        if level is not None:
            values["level"] = level
        if contains is not None:
            values["contains"] = literal_pattern(contains)
        return values

    def line(self, row: Row[Any]) -> str:
        """``2026-11-29T10:05:00Z checkout ERROR upstream timeout …``."""
        return f"{utc_text(row.ts)} {row.service} {row.level} {row.message}"

    def records(self, scope: OpsScope) -> str:
        """``ERROR logs containing 'timeout'``."""
        level, contains = scope.get("level"), scope.get("contains")
        text = f"{level} logs" if level else "logs"
        return f"{text} containing {contains!r}" if contains else text


class QueryMetrics(OpsTool):
    """Points of one metric of one service in a time window."""

    name = "query_metrics"
    description = (
        "Read one metric of one service in a time window [start, end), e.g. latency_p99_ms, "
        "error_rate, cpu_pct, memory_mb, db_connections. One line per point, earliest first."
    )
    rules = ScopeRules(
        tool="query_metrics",
        service_required=True,
        filters={"metric": parse_metric},
        required_filters=frozenset({"metric"}),
        default_limit=200,
    )
    parameters = scope_schema(
        rules, metric={"type": "string", "description": "Metric name, e.g. latency_p99_ms."}
    )
    table = ops_metrics

    def query(self, scope: OpsScope) -> Select[Any]:
        """Add the metric name."""
        return super().query(scope).where(self.table.c.name == bindparam("metric"))

    def values(self, scope: OpsScope) -> dict[str, Any]:
        """Add the metric name."""
        return super().values(scope) | {"metric": scope.get("metric")}

    def line(self, row: Row[Any]) -> str:
        """``2026-11-29T11:00:00Z checkout latency_p99_ms=4210``."""
        value = float(row.value)
        number = str(int(value)) if value.is_integer() else repr(value)
        return f"{utc_text(row.ts)} {row.service} {row.name}={number}"

    def records(self, scope: OpsScope) -> str:
        """``latency_p99_ms points``."""
        return f"{scope.get('metric')} points"


class ListDeployments(OpsTool):
    """Deployments and config changes in a time window, of one service or all."""

    name = "list_deployments"
    description = (
        "List deployments and config changes in a time window [start, end), for one service or "
        "every service. One line per deployment: version, author, change summary."
    )
    rules = ScopeRules(tool="list_deployments", service_required=False, default_limit=100)
    parameters = scope_schema(rules)
    table = ops_deployments

    def line(self, row: Row[Any]) -> str:
        """``2026-11-29T09:52:00Z checkout deploy v2.14.0 by alice: …``."""
        return (
            f"{utc_text(row.ts)} {row.service} deploy {row.version} by {row.author}: {row.summary}"
        )

    def records(self, scope: OpsScope) -> str:
        """``deployments``."""
        return "deployments"


class ListAlerts(OpsTool):
    """Alerts that fired in a time window, of one service or all."""

    name = "list_alerts"
    description = (
        "List alerts that fired in a time window [start, end), for one service or every service. "
        "One line per alert: name, severity, summary."
    )
    rules = ScopeRules(tool="list_alerts", service_required=False, default_limit=100)
    parameters = scope_schema(rules)
    table = ops_alerts

    def line(self, row: Row[Any]) -> str:
        """``2026-11-29T10:08:00Z checkout alert CheckoutLatencyHigh [critical]: …``."""
        return f"{utc_text(row.ts)} {row.service} alert {row.name} [{row.severity}]: {row.summary}"

    def records(self, scope: OpsScope) -> str:
        """``alerts``."""
        return "alerts"


def builtin_tools(
    engine: Engine, *, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
) -> list[Tool]:
    """The four built-in ops tools over ``engine``; the ops tables must exist (``load_sample``)."""
    kinds: tuple[type[OpsTool], ...] = (SearchLogs, QueryMetrics, ListDeployments, ListAlerts)
    return [kind(engine, max_result_bytes=max_result_bytes) for kind in kinds]
