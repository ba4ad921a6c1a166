"""What the tool boundary asks a tool before running it, read in one go (SPEC §8 preflight).

Every question the boundary puts to a tool for one request (its admission and read-only word,
the scope it needs, its canonical scope of the arguments, its origin, its result limit, whether
it stays local) is one call, :func:`read_port`, so for a blocking tool it runs in a port thread
within the call's bound, like the tool's ``run``: a tool whose argument check never returns (an
MCP tool's schema that fetches a URL, a plugin's lock) is abandoned at the deadline or a cancel,
its late answer dropped, and the run still ends. A non-blocking tool is asked inline, and so is
a blocking one that says ``checks_block = False``: its answers are computed in the process (the
built-in tools' scope is parsed from the arguments; only their ``run`` queries the database).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from application.ports import ToolArgumentsError, stays_local
from application.storable import storable_text
from application.tool_admission import admission_of
from domain.tool_invocation import ToolInvocation
from domain.values import McpSession

if TYPE_CHECKING:
    from uuid import UUID

    from application.ports import Tool, ToolCall
    from application.tool_admission import Admission

MAX_SHOWN_ARGUMENTS = 200
"""Characters of arguments that are not a JSON object quoted in their rejection."""
MAX_ERROR_TYPE = 64
"""Characters of a failure's class an invocation records (a JSON-RPC code, ``tool_error``)."""
MAX_CALL_ID = 128
"""Characters of the model's tool-call id an invocation records (OpenAI's are 30 or so)."""


@dataclass(frozen=True)
class PortView:
    """A tool's answers for one request; ``scope`` only when admitted, granted and readable."""

    name: str
    admission: Admission
    required_scope: str
    granted: bool
    scope: str | None
    problem: str | None
    """Why the arguments cannot be run (INVALID_REQUEST), when the tool was asked and refused."""
    origin: str
    read_only_override: bool
    max_result_bytes: int
    local: bool
    """Whether calls stay in the service (read by :func:`~application.ports.stays_local`)."""
    call_id: str = ""
    """The model's id of the call, cut to :data:`MAX_CALL_ID` characters (the trace's id)."""
    mcp: McpSession | None = None
    """The session a tool of an MCP server is called over (its ``mcp_session``), as it stands."""


def read_port(tool: Tool, call: ToolCall, granted_scopes: frozenset[str]) -> PortView:
    """Ask ``tool`` everything the preflight needs; its scope only when it may be called."""
    admission = admission_of(tool)
    required = tool.required_scope
    granted = required in granted_scopes
    scope: str | None = None
    problem: str | None = None
    if admission.admitted and granted:  # a refused tool is not asked to read the arguments
        try:
            scope = _scope(tool, call)
        except ToolArgumentsError as error:
            problem = str(error)
    return PortView(
        name=tool.name,
        admission=admission,
        required_scope=required,
        granted=granted,
        scope=scope,
        problem=problem,
        origin=str(getattr(tool, "origin", "builtin")),
        read_only_override=getattr(tool, "read_only_override", False) is True,
        max_result_bytes=tool.max_result_bytes,
        local=stays_local(tool),
        call_id=call.id[:MAX_CALL_ID],
        mcp=mcp_session(tool),
    )


def begin(run_id: UUID, view: PortView, scope: str, arguments: dict[str, Any]) -> ToolInvocation:
    """The invocation a call that passed the preflight begins: what the view says of it."""
    return ToolInvocation.begin(
        run_id,
        view.name,
        scope,
        arguments,
        origin=view.origin,
        read_only_override=view.read_only_override,
        call_id=view.call_id,
        mcp=view.mcp,
    )


def mcp_session(tool: Tool) -> McpSession | None:
    """The MCP session ``tool`` says it is called over (its ``mcp_session()``), if it says."""
    session = getattr(tool, "mcp_session", None)
    found = session() if callable(session) else None
    return found if isinstance(found, McpSession) else None


def checks_block(tool: Tool) -> bool:
    """Whether asking ``tool`` about a request may block (:func:`read_port` runs in a thread).

    As its ``run`` may, unless it says ``checks_block = False``.
    """
    return tool.blocking and getattr(tool, "checks_block", True) is not False


def _scope(tool: Tool, call: ToolCall) -> str:
    """The tool's canonical scope of the call; a tool that cannot give one rejects the request."""
    if call.raw_arguments is not None:
        shown = call.raw_arguments[:MAX_SHOWN_ARGUMENTS]
        raise ToolArgumentsError(f"arguments are not a JSON object: {shown!r}")
    try:
        scope = tool.normalize_scope(call.arguments)
    except ToolArgumentsError:
        raise
    except Exception as error:  # a tool that fails to read its arguments cannot be run
        detail = f"{tool.name} could not read the arguments: {type(error).__name__}: {error}"
        raise ToolArgumentsError(detail[:500]) from error
    if not isinstance(scope, str):
        raise ToolArgumentsError(f"{tool.name} gave a {type(scope).__name__} as scope, not text")
    return storable_text(scope)
