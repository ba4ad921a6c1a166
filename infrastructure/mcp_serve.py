"""Serve any ``Tool`` port over MCP with the SDK's server side (stdio or Streamable HTTP).

``harness mcp serve-sample`` uses it to offer the built-in ops tools over the shipped sample
data: the same names, descriptions and JSON schemas, each annotated read-only, each result the
tool's lines as one text block (none when the scope held nothing). An argument the tool refuses
is an MCP tool error with the tool's message, as a model would want to read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from application.ports import ToolArgumentsError, ToolExecutionError
from infrastructure.version import harness_version

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Sequence

    from mcp.server.context import ServerRequestContext
    from starlette.types import ASGIApp

    from application.ports import Tool


def tools_server(name: str, tools: Sequence[Tool]) -> Server[Any]:
    """An MCP server (low-level SDK) offering ``tools`` as they are, named with our version."""
    by_name = {tool.name: tool for tool in tools}

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_spec(tool) for tool in by_name.values()])

    async def call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            return _error(f"no tool {params.name!r}; known: {', '.join(sorted(by_name))}")
        arguments = dict(params.arguments or {})
        try:
            tool.normalize_scope(arguments)
            output = await anyio.to_thread.run_sync(tool.run, arguments)
        except (ToolArgumentsError, ToolExecutionError) as error:
            return _error(str(error))
        text = "\n".join(output.lines)
        content: list[types.ContentBlock] = [types.TextContent(text=text)] if text else []
        return types.CallToolResult(content=content)

    return Server(name, version=harness_version(), on_list_tools=list_tools, on_call_tool=call_tool)


def _spec(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=dict(tool.parameters),
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=not tool.read_only,
            idempotent_hint=tool.read_only,  # reading again changes nothing
            open_world_hint=not getattr(tool, "local", False),  # local: the service's own data
        ),
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin and stdout until it closes them."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(
    server: Server[Any], sock: socket.socket, guard: Callable[[ASGIApp], ASGIApp]
) -> None:
    """Serve Streamable HTTP at ``/mcp`` on the bound ``sock`` until interrupted.

    ``guard`` wraps the app: who may reach it (the keys, or this machine only).
    """
    host, port = sock.getsockname()[:2]
    app = guard(server.streamable_http_app(host=host))
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
