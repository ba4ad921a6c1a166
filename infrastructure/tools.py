"""Built-in read-only tools over the ops tables: logs, metrics, deployments and alerts.

Each satisfies the ``Tool`` port: ``normalize_scope`` validates and canonicalises the arguments
(see ``infrastructure.ops_scope``), ``run`` returns one compact line per record in time order, or no
lines when the scope holds nothing (the harness then records NO_EVIDENCE for exactly that scope).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, Table, func, select
from sqlalchemy.exc import SQLAlchemyError

from application.ports import JSON, Tool, ToolExecutionError, ToolOutput
from infrastructure.ops_data import (
    ops_alerts,
    ops_deployments,
    ops_logs,
    ops_metrics,
    sample_services,
    sample_window,
)
from infrastructure.ops_scope import (
    LOG_LEVELS,
    MAX_LIMIT,
    OpsScope,
    ScopeRules,
    parse_contains,
    parse_level,
    parse_metric,
    parse_scope,
    utc_text,
)

if TYPE_CHECKING:
    from datetime import datetime

    from sqlalchemy import Engine, Row

DEFAULT_MAX_RESULT_BYTES = 8000
OPS_READ_SCOPE = "ops:read"
_TOTAL = "harness_total"
"""The label of the window count of matching rows (no ops table has a column of that name)."""


def _schema(rules: ScopeRules, **filters: JSON) -> JSON:
    """The JSON-schema ``parameters`` of a tool with these rules and filter properties."""
    every = "" if rules.service_required else "; omit (or '*') for every service"
    properties: dict[str, JSON] = {
        "service": {"type": "string", "description": f"Service name, e.g. checkout{every}."},
        "start": {
            "type": "string",
            "description": "Window start, inclusive: ISO 8601, e.g. 2026-11-29T10:00:00Z "
            "(no offset means UTC).",
        },
        "end": {"type": "string", "description": "Window end, exclusive: ISO 8601, after start."},
        **filters,
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": rules.default_limit,
            "description": "Most records to return, earliest first.",
        },
    }
    required = ["service"] if rules.service_required else []
    required += ["start", "end", *sorted(rules.required_filters)]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


class OpsTool(ABC):
    """A read-only tool over one ops table; subclasses give the rules, filters and line format."""

    name: str
    description: str
    parameters: JSON
    read_only: bool
    required_scope: str
    max_result_bytes: int
    blocking: bool
    rules: ScopeRules
    table: Table

    def __init__(self, engine: Engine, *, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> None:
        """Query ``engine``; ``max_result_bytes`` bounds the evidence the harness keeps."""
        # Reads only: on PostgreSQL in autocommit, so a query is one round trip (no BEGIN held
        # open, no ROLLBACK when the connection goes back to the pool); SQLite reads are cheaper
        # in the driver's default mode.
        postgres = engine.dialect.name == "postgresql"
        autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._reader = autocommit if postgres else engine
        self.read_only = True
        self.local = True  # reads of the service's own database: nothing leaves, nothing changes
        self.required_scope = OPS_READ_SCOPE
        self.max_result_bytes = max_result_bytes
        self.known_services = sample_services()  # the ops tables are loaded from the sample
        # A read of an SQLite file in WAL mode never waits for a lock and has no network to hang
        # on; a PostgreSQL query can wait on both, so it runs under the deadline's watchdog.
        self.blocking = engine.dialect.name != "sqlite"
        self.checks_block = False  # the scope is parsed from the arguments: nothing waits

    def normalize_scope(self, arguments: JSON) -> str:
        """The canonical scope string; raises ToolArgumentsError naming the bad field."""
        return parse_scope(self.rules, arguments).canonical()

    def run(self, arguments: JSON) -> ToolOutput:
        """Matching records, earliest first; a note (no record) says what ``limit`` left out."""
        scope = parse_scope(self.rules, arguments)
        # One statement: the window count is the number of matching rows before LIMIT.
        query = self.query(scope).add_columns(func.count().over().label(_TOTAL))
        ordered = query.order_by(self.table.c.ts, self.table.c.id).limit(scope.limit)
        try:
            with self._reader.connect() as connection:
                rows = connection.execute(ordered).all()
        except SQLAlchemyError as error:
            raise ToolExecutionError("BACKEND", self._backend_message(error)) from error
        total = int(rows[0]._mapping[_TOTAL]) if rows else 0
        lines = tuple(self.line(row) for row in rows)
        beyond = total - len(rows)
        notes = (f"[{beyond} more records beyond limit={scope.limit}]",) if beyond > 0 else ()
        return ToolOutput(lines, self._describe(scope, len(rows), total), notes + _beyond(scope))

    def query(self, scope: OpsScope) -> Select[Any]:
        """Rows of ``self.table`` in the scope's service and window, before the tool's filters."""
        columns = self.table.c
        query = select(self.table).where(columns.ts >= scope.start, columns.ts < scope.end)
        return query if scope.service is None else query.where(columns.service == scope.service)

    @abstractmethod
    def line(self, row: Row[Any]) -> str:
        """One record as one line."""

    @abstractmethod
    def records(self, scope: OpsScope) -> str:
        """What the scope asks for, in words, e.g. ``ERROR logs containing 'timeout'``."""

    def _describe(self, scope: OpsScope, shown: int, total: int) -> str:
        """The scope in words with how many records matched and how many are shown."""
        what = f"{self.records(scope)} {scope.window()}"
        if total == 0:
            return f"no {what}"
        return f"{what}: {total} found" if shown == total else f"{what}: first {shown} of {total}"

    def _backend_message(self, error: SQLAlchemyError) -> str:
        """The database's failure in one line, and what to check."""
        cause = getattr(error, "orig", None) or error
        detail = (str(cause).strip().splitlines() or [""])[0][:200]
        return (
            f"{self.name}: cannot read table {self.table.name} ({type(cause).__name__}: {detail}); "
            "check the database and that the ops sample tables are created and loaded"
        )


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
    parameters = _schema(
        rules,
        level={"type": "string", "enum": list(LOG_LEVELS), "description": "Only this level."},
        contains={"type": "string", "maxLength": 200, "description": "Text the message contains."},
    )
    table = ops_logs

    def query(self, scope: OpsScope) -> Select[Any]:
        """Add the level and text filters."""
        query = super().query(scope)
        level, contains = scope.get("level"), scope.get("contains")
        if level is not None:
            query = query.where(self.table.c.level == level)
        if contains is not None:
            query = query.where(self.table.c.message.icontains(contains, autoescape=True))
        return query

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
    parameters = _schema(
        rules, metric={"type": "string", "description": "Metric name, e.g. latency_p99_ms."}
    )
    table = ops_metrics

    def query(self, scope: OpsScope) -> Select[Any]:
        """Add the metric name."""
        return super().query(scope).where(self.table.c.name == scope.get("metric"))

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
    parameters = _schema(rules)
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
    parameters = _schema(rules)
    table = ops_alerts

    def line(self, row: Row[Any]) -> str:
        """``2026-11-29T10:08:00Z checkout alert CheckoutLatencyHigh [critical]: …``."""
        return f"{utc_text(row.ts)} {row.service} alert {row.name} [{row.severity}]: {row.summary}"

    def records(self, scope: OpsScope) -> str:
        """``alerts``."""
        return "alerts"


def coverage_note(start: datetime, end: datetime) -> str:
    """The note of a tool asked about a window its data does not (wholly) cover."""
    return f"[the data covers {utc_text(start)} to {utc_text(end)} (end exclusive) only]"


def _beyond(scope: OpsScope) -> tuple[str, ...]:
    """A coverage note when the scope reaches outside the data (an empty window says why)."""
    start, end = sample_window()  # the ops tables are loaded from the sample
    inside = start <= scope.start and scope.end <= end
    return () if inside else (coverage_note(start, end),)


def builtin_tools(
    engine: Engine, *, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
) -> list[Tool]:
    """The four built-in ops tools over ``engine``; the ops tables must exist (``load_sample``)."""
    kinds: tuple[type[OpsTool], ...] = (SearchLogs, QueryMetrics, ListDeployments, ListAlerts)
    return [kind(engine, max_result_bytes=max_result_bytes) for kind in kinds]
