"""``harness mcp serve``: the harness itself as an MCP server other agents call.

Tools: ``ask`` and ``diagnose`` start a run of the question (routed as any other; ``diagnose``
is the name an agent looks for when something is broken) and return what it published, with
its citations and run id; each feed entry is reported as an MCP progress notification, and a
call the client cancels (or abandons) cancels the run (``USER_REQUESTED``, in the log).
``list_runs`` and ``explain_run`` read, and every run is a resource, ``harness://runs/{id}``.

Who asks: over Streamable HTTP, the API's keys and roles (``Authorization: Bearer``; a user sees
and starts only their own runs, an auditor reads all and starts none); over stdio, whoever
started the process, as the CLI (the local admin).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials
from mcp.server.lowlevel import Server
from pydantic import ValidationError

from api.auth import LOCAL, Principal, authenticate
from api.errors import NotFound
from api.feed import entries
from api.mcp_answers import ANSWER_SCHEMA, answer_result, error, problems
from api.mcp_reads import READ_TOOLS, RUN_URI, ReadTools
from api.routes.starting import start_run
from api.schemas import ChatCreate
from application.dispatch import AdmissionRefused
from application.ports import StoreUnavailableError
from domain.states import CancellationReason
from infrastructure.version import harness_version

if TYPE_CHECKING:
    from uuid import UUID

    from mcp.server.context import ServerRequestContext

    from api.deps import Worker

log = logging.getLogger(__name__)

ASK_INPUT: dict[str, Any] = ChatCreate.model_json_schema() | {"additionalProperties": False}
"""``ask``'s and ``diagnose``'s arguments: ``POST /v1/chat``'s body (query, session, limits)."""
ASKING = {
    "ask": "Ask the diagnosis harness anything about the operated services: it routes the "
    "question (chat, runbook knowledge or a diagnosis over logs, metrics, deployments and "
    "alerts) and returns only what passed its evidence checks, with citations and the run id.",
    "diagnose": "Diagnose an incident (e.g. 'Why was checkout slow yesterday?'): the harness "
    "reads logs, metrics, deployments and alerts under budgets and publishes a cited diagnosis "
    "only if its evidence checks pass, else a typed safe fallback saying what was missing.",
}


def caller(worker: Worker, ctx: ServerRequestContext[Any]) -> Principal:
    """Who sent this request: the key's principal over HTTP; over stdio, the local admin."""
    request = ctx.request
    if request is None:
        return Principal(LOCAL, "admin")
    scheme, _, offered = request.headers.get("authorization", "").strip().partition(" ")
    credentials = (
        HTTPAuthorizationCredentials(scheme=scheme, credentials=offered.strip())
        if offered.strip()
        else None
    )
    return authenticate(worker.settings, credentials)  # the guard let only good keys in


def harness_server(worker: Worker) -> Server[Any]:
    """The MCP server over one worker's services."""
    reads = ReadTools(worker)

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[*_asking_tools(), *reads.tools()])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await _called(worker, reads, ctx, params)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await reads.resources(caller(worker, ctx), params.cursor if params else None)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await reads.read(caller(worker, ctx), str(params.uri))

    return Server(
        "diagnosis-harness",
        version=harness_version(),
        instructions="Ask operational questions with `ask` or `diagnose`; every answer is a "
        f"run you can explain (`explain_run`) or read ({RUN_URI}).",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=_templates,
        on_read_resource=read_resource,
    )


async def _called(
    worker: Worker,
    reads: ReadTools,
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
) -> types.CallToolResult:
    """The tool ``params`` names, for the caller; whatever fails is said in words."""
    arguments, who = dict(params.arguments or {}), caller(worker, ctx)
    if params.name not in (*ASKING, *READ_TOOLS):
        known = ", ".join(sorted((*ASKING, *READ_TOOLS)))
        return error(f"no tool {params.name!r:.60}; known: {known}")
    try:
        if params.name in ASKING:
            return await ask(worker, ctx, who, arguments)
        return await reads.call(params.name, who, arguments)
    except Exception as failed:  # a bug, or the database away: in words, never a traceback
        log.exception("mcp: %s failed", params.name)
        return error(f"{params.name} failed ({type(failed).__name__}); the harness logged why")


async def _templates(
    _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[ReadTools.template()])


def _asking_tools() -> list[types.Tool]:
    hints = types.ToolAnnotations(
        read_only_hint=False,  # it records a run (and reads the operated systems, never writes)
        destructive_hint=False,
        idempotent_hint=False,
        open_world_hint=True,
    )
    return [
        types.Tool(
            name=name,
            description=description,
            input_schema=ASK_INPUT,
            output_schema=ANSWER_SCHEMA,
            annotations=hints,
        )
        for name, description in ASKING.items()
    ]


async def ask(
    worker: Worker, ctx: ServerRequestContext[Any], who: Principal, arguments: dict[str, Any]
) -> types.CallToolResult:
    """Start a run of the question and return what it published, reporting progress."""
    if who.role not in ("user", "admin"):  # as POST /v1/chat's
        return error(f"the {who.role} role may not start runs (allowed: user, admin)")
    try:
        body = ChatCreate.model_validate(arguments)
        started = await anyio.to_thread.run_sync(start_run, worker, body, who)
    except (ValidationError, RequestValidationError) as invalid:
        return error(f"invalid arguments: {problems(invalid)}")
    except (NotFound, AdmissionRefused, StoreUnavailableError) as refused:
        return error(str(refused))
    run_id = str(started.run_id)
    try:
        ending = await _watch(worker, ctx, run_id)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_cancel, worker, started.run_id)
        raise
    except Exception as failed:  # the database away: the run goes on, read it later
        log.warning("mcp: following run %s failed: %s", run_id, failed)
        return error(f"the run {run_id} goes on, but following it failed; read it later")
    return answer_result(run_id, started.session_id, ending)


async def _watch(worker: Worker, ctx: ServerRequestContext[Any], run_id: str) -> dict[str, Any]:
    """Follow the run's feed to its end, each entry a progress notification; its last words."""
    token = (ctx.meta or {}).get("progress_token")
    ending: dict[str, Any] = {}
    async for row in entries(worker.hub, run_id, worker.settings.sse_keepalive):
        if token is not None:
            await ctx.session.send_progress_notification(
                token, float(row["seq"]), message=_progress(row["event"], row["data"])
            )
        if row["event"] in ("content", "failure"):
            ending = row["data"]
    return ending


def _progress(kind: str, data: dict[str, Any]) -> str:
    """A feed entry in a few words; the first names the run (to explain or cancel it)."""
    match kind:
        case "metadata":
            return f"run {data['run_id']} started"
        case "status":
            return str(data["status"])
        case "content":
            return f"published: {data['release_outcome']}"
        case "failure":
            return f"failed: {data['termination_state']} ({data['termination_reason']})"
        case _:
            return f"{kind}: {data.get('release_outcome')}"


def _cancel(worker: Worker, run_id: UUID) -> None:
    try:
        worker.store.cancel(run_id, CancellationReason.USER_REQUESTED)
    except Exception:  # a thread of its own: log, never raise into nowhere
        log.exception("run %s: the MCP call was cancelled, and cancelling the run failed", run_id)
