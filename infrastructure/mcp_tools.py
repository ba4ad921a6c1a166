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

import hashlib
import json
from typing import TYPE_CHECKING, Any

from jsonschema import exceptions as schema_errors
from referencing.exceptions import Unresolvable

from application.ports import JSON, ToolArgumentsError, ToolExecutionError, ToolOutput
from application.tool_admission import READ_ONLY, Admission, AdmittedBy, Refusal
from application.tool_secrets import NO_SECRETS
from domain.tokens import inside_a_token
from domain.tool_states import ToolErrorCode
from infrastructure.mcp_client import McpServerError
from infrastructure.mcp_secrets import redacted_result
from infrastructure.tool_schemas import SchemaRefused, compiled

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from mcp_types import CallToolResult, ContentBlock
    from mcp_types import Tool as McpToolSpec

    from domain.redactor import Redactor
    from infrastructure.mcp_client import McpConnection
    from infrastructure.tool_config import ToolOptions

MAX_SCOPE_CHARS = 1000
MAX_ERROR_CHARS = 500
DEFAULT_MAX_RESULT_BYTES = 8000


def annotation_admission(
    spec: McpToolSpec | None, allow_not_read_only: bool = False, setting: str = ""
) -> Admission:
    """The read-only rule over a listed tool's annotations; ``setting`` is where to allow it."""
    notes = None if spec is None else spec.annotations
    ro = None if notes is None else notes.read_only_hint
    destructive = notes is not None and notes.destructive_hint is True
    if spec is None:
        found = Admission(refusal=Refusal.NOT_LISTED, why="the server no longer lists it")
        return found  # nothing to admit: allow_not_read_only does not bring it back
    if ro is True and not destructive:
        return READ_ONLY
    if ro is False:
        refusal, why = Refusal.READ_ONLY_HINT_FALSE, "the server says readOnlyHint: false"
        why += ", destructiveHint: true" if destructive else ""
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
        self._schemas = (spec.input_schema, spec.output_schema)  # a change refuses it
        self._validator: Validator | None = None
        self._refused: Admission | None = None
        try:  # nothing is fetched, ever; a secret it was handed refuses it too
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
            connection = self.connection
            result = connection.call(self.remote_name, dict(arguments), connection.timeout)
        except McpServerError as error:  # its text may quote the server: redacted, then cut
            said = self.redactor.redact(str(error))
            raise ToolExecutionError(error.code, said.text[:MAX_ERROR_CHARS], said.count) from None
        result, hidden = redacted_result(self.redactor, result)
        if result.is_error:
            text = " ".join(_text_of(result.content)).strip() or "no message"
            raise ToolExecutionError(
                ToolErrorCode.EXECUTION.value,
                f"{self.name} failed: {text}"[:MAX_ERROR_CHARS],
                hidden,
            )
        lines, notes = project(result, self.max_result_bytes)
        return ToolOutput(lines, "", notes, hidden)

    def _listed(self) -> McpToolSpec | None:
        return self.connection.tools.get(self.remote_name)


def canonical_scope(arguments: JSON) -> str:
    """Sorted compact JSON; beyond MAX_SCOPE_CHARS, a prefix and a digest of the whole."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(text) <= MAX_SCOPE_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[: MAX_SCOPE_CHARS - 40]}… sha256:{digest}"


class _Lines:
    """Lines kept up to a byte limit; once one does not fit, the rest is only counted.

    What the harness says about the result (a record cut short, bytes not shown, content not
    inlined) goes to ``notes``, never into the records: a citation can quote only records.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 64)
        self.kept: list[str] = []
        self.notes: list[str] = []
        self.used = 0
        self.skipped = 0
        """Bytes of content not shown (counted once the limit is reached)."""

    def add(self, line: str) -> None:
        size = len(line.encode("utf-8", "surrogatepass")) + 1
        if self.skipped or self.used + size > self.limit:
            if not self.used:  # one huge first line: keep its start, say so
                start = _start_of(line, self.limit - 48)
                self.kept += [start] if start else []
                shown = len(start.encode("utf-8", "surrogatepass"))
                self.notes.append(f"[the first record was cut to {shown} of {size - 1} bytes]")
                self.used = self.limit
            else:
                self.skipped += size
            return
        self.kept.append(line)
        self.used += size

    def result(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        note = f"[{self.skipped} more bytes of the result not shown]"
        notes = (*self.notes, note) if self.skipped else tuple(self.notes)
        return tuple(self.kept), notes


def _start_of(line: str, limit: int) -> str:
    """The whole tokens ``line`` starts with in ``limit`` bytes: a cut token proves nothing."""
    end = used = 0
    for char in line:
        used += len(char.encode("utf-8", "surrogatepass"))
        if used > limit:
            break
        end += 1
    while end > 0 and inside_a_token(line, end):
        end -= 1
    return line[:end].rstrip()


def project(result: CallToolResult, limit: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Evidence lines of a result and notes about it: text lines, or structured content as JSON.

    Structured content is shown only when there is no text: a server that sends both sends the
    same data twice (the MCP specification asks it to serialise the structure as text too).
    Images, audio and resources are never inlined: a note describes each.
    """
    lines = _Lines(limit)
    texts = 0
    for block in result.content:
        if block.type != "text":
            lines.notes.append(describe(block))
            continue
        texts += 1
        if lines.skipped:  # full already: count the block, do not split it
            lines.skipped += len(block.text.encode("utf-8", "surrogatepass")) + 1
            continue
        for line in block.text.splitlines():
            lines.add(line)
    if result.structured_content is not None and not texts:
        structured = json.dumps(
            result.structured_content, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        lines.add(structured)
    return lines.result()


def describe(block: ContentBlock) -> str:
    """A one-line description of content that is never inlined (images, audio, resources)."""
    kind: str = block.type
    data: Any = getattr(block, "data", None)
    if kind in ("image", "audio") and isinstance(data, str):
        mime = getattr(block, "mime_type", "?")
        return f"[{kind} {mime}, about {len(data.rstrip('=')) * 3 // 4} bytes, not shown]"
    if kind == "resource":
        inner = block.resource  # type: ignore[union-attr]
        body = str(getattr(inner, "text", None) or getattr(inner, "blob", ""))
        mime = inner.mime_type or "unknown type"
        return f"[resource {str(inner.uri)[:200]} ({mime}), {len(body)} characters, not shown]"
    if kind == "resource_link":
        uri = str(getattr(block, "uri", ""))[:200]
        return f"[resource link {uri} ({getattr(block, 'mime_type', None) or 'unknown type'})]"
    return f"[{kind[:40]} content, not shown]"


def _text_of(content: list[ContentBlock]) -> list[str]:
    return [block.text[:MAX_ERROR_CHARS] for block in content if block.type == "text"]
