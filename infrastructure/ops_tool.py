"""The base of the built-in ops tools: scope checks, one prepared statement per shape, output.

An :class:`OpsTool` reads one ops table (``infrastructure.ops_data``) in the window and service
its arguments name (``infrastructure.ops_scope``); ``infrastructure.tools`` holds the four tools.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from sqlalchemy import Integer, Select, Table, bindparam, func, select
from sqlalchemy.exc import SQLAlchemyError

from application.ports import JSON, ToolExecutionError, ToolOutput
from infrastructure.ops_data import sample_services, sample_window
from infrastructure.ops_scope import MAX_LIMIT, OpsScope, ScopeRules, parse_scope, utc_text

if TYPE_CHECKING:
    from datetime import datetime

    from sqlalchemy import Engine, Row

DEFAULT_MAX_RESULT_BYTES = 8000
OPS_READ_SCOPE = "ops:read"
_TOTAL = "harness_total"
"""The label of the window count of matching rows (no ops table has a column of that name)."""
LIKE_ESCAPE = "/"
"""The escape character of a ``contains`` pattern (SQLAlchemy's ``autoescape`` uses it too)."""


def scope_schema(rules: ScopeRules, **filters: JSON) -> JSON:
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
        self._statements: dict[tuple[bool, tuple[str, ...]], Select[Any]] = {}

    def normalize_scope(self, arguments: JSON) -> str:
        """The canonical scope string; raises ToolArgumentsError naming the bad field."""
        return parse_scope(self.rules, arguments).canonical()

    def run(self, arguments: JSON) -> ToolOutput:
        """Matching records, earliest first; a note (no record) says what ``limit`` left out."""
        scope = parse_scope(self.rules, arguments)
        try:
            with self._reader.connect() as connection:
                rows = connection.execute(self._statement(scope), self.values(scope)).all()
        except SQLAlchemyError as error:
            raise ToolExecutionError("BACKEND", self._backend_message(error)) from error
        total = int(rows[0]._mapping[_TOTAL]) if rows else 0
        lines = tuple(self.line(row) for row in rows)
        beyond = total - len(rows)
        notes = (f"[{beyond} more records beyond limit={scope.limit}]",) if beyond > 0 else ()
        return ToolOutput(lines, self._describe(scope, len(rows), total), notes + _beyond(scope))

    def _statement(self, scope: OpsScope) -> Select[Any]:
        """The statement for scopes of this one's shape (which of service and filters it has).

        Built once per shape with its values as parameters (:meth:`values`): building a
        statement and its cache key cost more than running the query on the sample tables.
        One statement: the window count is the number of matching rows before LIMIT.
        """
        shape = (scope.service is None, tuple(sorted(name for name, _ in scope.filters)))
        found = self._statements.get(shape)
        if found is None:
            query = self.query(scope).add_columns(func.count().over().label(_TOTAL))
            ordered = query.order_by(self.table.c.ts, self.table.c.id)
            found = self._statements[shape] = ordered.limit(bindparam("limit", type_=Integer))
        return found

    def query(self, scope: OpsScope) -> Select[Any]:
        """Rows of ``self.table`` in the scope's service and window, before the tool's filters.

        Only the scope's shape counts: every value is a parameter, given by :meth:`values`.
        """
        columns = self.table.c
        query = select(self.table).where(
            columns.ts >= bindparam("start"), columns.ts < bindparam("end")
        )
        if scope.service is None:
            return query
        return query.where(columns.service == bindparam("service"))

    def values(self, scope: OpsScope) -> dict[str, Any]:
        """The parameters of :meth:`query`'s statement for ``scope``."""
        values: dict[str, Any] = {"start": scope.start, "end": scope.end, "limit": scope.limit}
        if scope.service is not None:
            values["service"] = scope.service
        return values

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


def literal_pattern(text: str) -> str:
    """``text`` for a ``LIKE … ESCAPE '/'`` that matches it literally (as ``autoescape`` does)."""
    escape = LIKE_ESCAPE
    return text.replace(escape, escape * 2).replace("%", escape + "%").replace("_", escape + "_")


def coverage_note(start: datetime, end: datetime) -> str:
    """The note of a tool asked about a window its data does not (wholly) cover."""
    return f"[the data covers {utc_text(start)} to {utc_text(end)} (end exclusive) only]"


def _beyond(scope: OpsScope) -> tuple[str, ...]:
    """A coverage note when the scope reaches outside the data (an empty window says why)."""
    start, end = sample_window()  # the ops tables are loaded from the sample
    inside = start <= scope.start and scope.end <= end
    return () if inside else (coverage_note(start, end),)
