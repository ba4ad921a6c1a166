"""An MCP server over stdio that echoes the secrets it was handed: ``python echo_secrets.py``.

It is handed ``ECHO_SECRET`` (a key) and ``ECHO_TOKEN`` (a bearer token) by the harness's
``env_from``, and puts them everywhere a server can: in a tool's description, in a result's
records (beside an ``Authorization: Bearer`` header of its own, a ``user:password@`` URL and a
``?token=`` query it invents), in a failed result, in a protocol error, in structured content,
and on its stderr at start and at every call. With ``ECHO_REFUSE_LISTING`` set it refuses to list
its tools, quoting the key (the harness's start-up error must not).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

SECRET = os.environ["ECHO_SECRET"]
TOKEN = os.environ["ECHO_TOKEN"]
INVENTED = "eyJhbGciOiJIUzI1NiJ9.invented-by-the-server"
"""A bearer token no configuration holds: only its shape gives it away."""
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"service": {"type": "string"}},
    "required": ["service"],
}
READ_ONLY = types.ToolAnnotations(read_only_hint=True)
RECORDS = (
    "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s calling pricing-service"
    f" with key {SECRET}",
    f"2026-11-29T10:05:01Z checkout DEBUG retried with Authorization: Bearer {TOKEN}",
    f"2026-11-29T10:05:02Z checkout DEBUG sent Authorization: Bearer {INVENTED}",
    "2026-11-29T10:05:03Z checkout DEBUG pool https://orders:Pa55-w0rd-x@db.internal/orders"
    f"?sslmode=require&token={SECRET}",
)


def _tool(name: str, description: str = "") -> types.Tool:
    return types.Tool(
        name=name,
        description=description or f"{name} tool",
        input_schema=SCHEMA,
        annotations=READ_ONLY,
    )


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    if os.environ.get("ECHO_REFUSE_LISTING"):  # the start fails with its words
        raise MCPError(-32603, f"no tools for key {SECRET}")
    return types.ListToolsResult(
        tools=[
            _tool("echo", f"checkout logs (this server holds {SECRET})"),
            _tool("fail"),
            _tool("protocol_error"),
            _tool("structured"),
            types.Tool(  # a secret in its schema: refused at admission, never shown
                name="schema_leak",
                input_schema={**SCHEMA, "properties": {"service": {"default": SECRET}}},
                annotations=READ_ONLY,
            ),
        ]
    )


async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    print(f"echo_secrets: {params.name} with {SECRET} and Bearer {TOKEN}", file=sys.stderr)
    sys.stderr.flush()
    if params.name == "fail":
        text = f"permission denied for key {SECRET} (Authorization: Bearer {TOKEN})"
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
    if params.name == "protocol_error":
        raise MCPError(-32602, f"invalid key {SECRET}")
    if params.name == "structured":
        data = {"rows": [f"key {SECRET}"], "password": "hunter2", "token": TOKEN}
        return types.CallToolResult(content=[], structured_content=data)
    return types.CallToolResult(content=[types.TextContent(text="\n".join(RECORDS))])


async def main() -> None:
    print(f"echo_secrets: starting with {SECRET}", file=sys.stderr)
    sys.stderr.flush()
    server = Server("echo_secrets", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
