"""MCP tools behind the ``Tool`` port: the read-only rule, argument checks and bounded evidence.

A tool is read-only only when the server's annotations say ``readOnlyHint: true`` and do not also
say ``destructiveHint: true`` (a contradiction is taken at its worst). A tool that is not is
refused (:func:`annotation_admission` says why): it is never offered to the model, and the
boundary refuses a request for it at preflight with NOT_READ_ONLY naming the setting that would
admit it — ``allow_not_read_only``, which the run's events record on each invocation. The rule is
checked again after every re-listing (a restarted server may answer differently), and a tool
that no longer passes is never called. Its schemas are checked and compiled once, at admission
(``infrastructure.tool_schemas``): checking arguments never fetches anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jsonschema import exceptions as schema_errors
from referencing.exceptions import Unresolvable

from application.ports import JSON, ToolArgumentsError, ToolExecutionError, ToolOutput
from application.tool_admission import READ_ONLY, Admission, AdmittedBy, Refusal
from application.tool_secrets import NO_SECRETS
from domain.tool_states import ToolErrorCode
from infrastructure.mcp_client import McpServerError
from infrastructure.mcp_results import MAX_ERROR_CHARS, canonical_scope, error_texts, project
from infrastructure.mcp_secrets import redacted_result
from infrastructure.tool_schemas import SchemaRefused, compiled

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from mcp_types import Tool as McpToolSpec

    from domain.redactor import Redactor
    from domain.values import McpSession
    from infrastructure.mcp_client import McpConnection
    from infrastructure.tool_config import ToolOptions

TOOL_ERROR = "tool_error"
"""The class of a result the server marked ``isError`` (the MCP conventions' ``error.type``)."""
DEFAULT_MAX_RESULT_BYTES = 8000
"""Bytes of a result the harness keeps when the configuration does not say."""


def annotation_admission(
    spec: McpToolSpec | None, allow_not_read_only: bool = False, setting: str = ""
) -> Admission:
    """The read-only rule over a listed tool's annotations; ``setting`` is where to allow it."""
    if spec is None:
        # Nothing to admit: allow_not_read_only does not bring back a tool the server dropped.
        return Admission(refusal=Refusal.NOT_LISTED, why="the server no longer lists it")
    notes = spec.annotations
    read_only = None if notes is None else notes.read_only_hint
    destructive = notes is not None and notes.destructive_hint is True
    if read_only is True and not destructive:
        return READ_ONLY
    if read_only is False:
        refusal = Refusal.READ_ONLY_HINT_FALSE
        why = "the server says readOnlyHint: false"
        if destructive:
            why += ", destructiveHint: true"
    elif destructive:
        refusal, why = Refusal.DESTRUCTIVE, "the server says destructiveHint: true"
    else:
        refusal, why = Refusal.NOT_ANNOTATED, "the server gives no readOnlyHint"
    if allow_not_read_only:
        return Admission(AdmittedBy.ALLOW_NOT_READ_ONLY, why=why)
    remedy = f"set allow_not_read_only = true in {setting}" if setting else ""
    return Admission(refusal=refusal, why=why, remedy=remedy)


class McpTool:
    """One tool of one MCP server, as the harness's ``Tool`` port."""

    blocking = True

    def __init__(
        self,
        connection: McpConnection,
        spec: McpToolSpec,
        options: ToolOptions,
        *,
        prefix: str = "",
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        redactor: Redactor = NO_SECRETS,
    ) -> None:
        """Offer the server's tool ``spec`` as ``prefix + spec.name``, its schemas compiled now.

        A schema not safe to check (``infrastructure.tool_schemas``) or holding a secret of
        ``redactor`` (what its server was handed) refuses the tool (Refusal.SCHEMA, why): never
        offered, called or shown. Its description and answers hide the secrets, before any cut.
        """
        self.connection = connection
        self.remote_name = spec.name
        self.name = prefix + spec.name
        self.redactor = redactor
        self.description = redactor.hide((spec.description or spec.title or spec.name)[:2000])
        self.parameters: JSON = {}
        self.required_scope = options.scope
        self.max_result_bytes = max_result_bytes
        self.allow_not_read_only = options.allow_not_read_only
        self.origin = f"mcp:{connection.name}"
        # The schemas it was admitted with: a server that lists others later refuses the tool.
        self._schemas = (spec.input_schema, spec.output_schema)
        self._validator: Validator | None = None
        self._refused: Admission | None = None
        # Compiling fetches nothing, ever; a schema holding a secret it was handed refuses it.
        try:
            self._validator = compiled(spec.input_schema, secrets=redactor)
            if spec.output_schema is not None:
                compiled(spec.output_schema, "outputSchema", redactor)
        except SchemaRefused as error:
            self._refused = Admission(refusal=Refusal.SCHEMA, why=str(error))
            return
        self.parameters = spec.input_schema

    @property
    def admission(self) -> Admission:
        """Refused for its schemas, else the read-only rule over the server's latest listing."""
        listed = self._listed()
        if listed is not None and self._refused is not None:
            return self._refused
        if listed is not None and (listed.input_schema, listed.output_schema) != self._schemas:
            why = "the server changed its schemas since it was admitted; restart the harness"
            return Admission(refusal=Refusal.SCHEMA, why=why)
        table = f"[servers.{self.connection.name}.tools.{self.remote_name}]"
        setting = f"{table} of HARNESS_TOOLS_CONFIG"
        return annotation_admission(listed, self.allow_not_read_only, setting)

    @property
    def annotations(self) -> dict[str, Any]:
        """The tool's annotations as the server last listed them (MCP's names: readOnlyHint, …)."""
        spec = self._listed()
        notes = None if spec is None else spec.annotations
        return {} if notes is None else notes.model_dump(by_alias=True, exclude_none=True)

    @property
    def read_only(self) -> bool:
        """Whether the boundary may run it: annotated read-only, or explicitly allowed."""
        return self.admission.admitted

    @property
    def read_only_override(self) -> bool:
        """True when only the configuration's ``allow_not_read_only`` admits it (recorded)."""
        return self.admission.by is AdmittedBy.ALLOW_NOT_READ_ONLY

    def normalize_scope(self, arguments: JSON) -> str:
        """The arguments as canonical JSON, once they satisfy the tool's ``inputSchema``.

        The validator was compiled at admission and fetches nothing; a schema that recurses
        without end for these arguments refuses them (it never reaches the server).
        """
        if self._validator is None:
            raise ToolArgumentsError(f"{self.name} is refused: {self.admission.why}")
        try:
            problem = schema_errors.best_match(self._validator.iter_errors(dict(arguments)))
        except (RecursionError, Unresolvable):
            raise ToolArgumentsError(
                "the tool's inputSchema cannot check these arguments (a reference loops)"
            ) from None
        if problem is not None:
            field = ".".join(str(p) for p in problem.absolute_path) or "arguments"
            raise ToolArgumentsError(f"{field}: {problem.message}"[:MAX_ERROR_CHARS])
        return canonical_scope(arguments)

    def run(self, arguments: JSON) -> ToolOutput:
        """Call the tool and project its result; ToolExecutionError when it or its server fails."""
        try:
            self.connection.start()  # a broken server is started again and re-listed here
            admission = self.admission  # the server's latest word, after a restart too
            if not admission.admitted:
                raise ToolExecutionError(
                    "NOT_READ_ONLY", f"not called: {admission.rejection(self.name)}"
                )
            result = self.connection.call(
                self.remote_name, dict(arguments), self.connection.timeout
            )
        except McpServerError as error:
            # Its text may quote the server: the secrets are hidden first, then it is cut.
            said = self.redactor.redact(str(error))
            text = said.text[:MAX_ERROR_CHARS]
            raise ToolExecutionError(error.code, text, said.count, error.error_type) from None
        result, hidden = redacted_result(self.redactor, result)
        if result.is_error:
            text = " ".join(error_texts(result.content)).strip() or "no message"
            raise ToolExecutionError(
                ToolErrorCode.EXECUTION.value,
                f"{self.name} failed: {text}"[:MAX_ERROR_CHARS],
                hidden,
                TOOL_ERROR,
            )
        lines, notes = project(result, self.max_result_bytes)
        return ToolOutput(lines, "", notes, hidden)

    def mcp_session(self) -> McpSession:
        """The session this tool's calls go over, as it stands (an invocation records it)."""
        return self.connection.session()

    def _listed(self) -> McpToolSpec | None:
        """The tool as the server last listed it; None once the server no longer lists it."""
        return self.connection.tools.get(self.remote_name)
