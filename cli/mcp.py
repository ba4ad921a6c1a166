"""``harness mcp …``: a real MCP server over the shipped sample operations data.

``harness mcp serve-sample`` needs no set-up: it loads the sample into a private SQLite file in
a temporary directory (removed when it stops) and serves the four built-in ops tools over MCP,
on stdin/stdout by default (for a ``transport = "stdio"`` server in HARNESS_TOOLS_CONFIG), or
over Streamable HTTP with ``--http``. Nothing but MCP is written to stdout. Over HTTP it keeps
the rule of ``harness serve``: without API keys (HARNESS_API_KEYS) it binds to loopback only and
answers only this machine's own clients; with keys, every request must carry one.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.common import err_console

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.types import ASGIApp

    from infrastructure.settings import Settings

mcp_app = typer.Typer(
    help="Serve the sample operations data as an MCP server.", no_args_is_help=True
)


@mcp_app.command("serve-sample")
def serve_sample(
    http: Annotated[
        bool, typer.Option("--http", help="Serve Streamable HTTP at /mcp instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option(help="Bind address with --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port with --http (0: any).")] = 8765,
) -> None:
    """Serve search_logs, query_metrics, list_deployments and list_alerts over the sample data.

    Each tool is annotated read-only and takes the built-in tool's JSON schema, so a harness
    configured with only this server reaches the same diagnosis as with its built-in tools.
    """
    import anyio

    from bootstrap.composition import bootstrap
    from cli.common import load_settings
    from cli.serve import check_port, refuse_exposed
    from infrastructure.mcp_serve import serve_http, serve_stdio, tools_server
    from infrastructure.settings import Settings
    from infrastructure.tools import builtin_tools

    keys = load_settings().api_keys if http else []  # HARNESS_API_KEYS, checked as serve does
    if http:
        refuse_exposed(bool(keys), host, "read the sample tools")
    sock = check_port(host, port) if http else None  # a taken port: one line, exit 2
    with tempfile.TemporaryDirectory(prefix="harness-mcp-sample-") as directory:
        url = f"sqlite:///{Path(directory) / 'sample.db'}"
        settings = Settings(database_url=url, tools_config=None, api_keys=keys)
        with bootstrap(settings, create=True, sample=True) as services:
            server = tools_server("harness-sample-ops", builtin_tools(services.engine))
            if sock is None:
                anyio.run(serve_stdio, server)
                return
            bound_host, bound_port = sock.getsockname()[:2]
            err_console().print(f"serving MCP on http://{bound_host}:{bound_port}/mcp")
            serve_http(server, sock, _guard(settings))


def _guard(settings: Settings) -> Callable[[ASGIApp], ASGIApp]:
    """With keys: a key on every request; without: this machine's own clients only."""
    from api.auth import KeysRequired, LoopbackOnly

    if settings.api_keys:
        return lambda app: KeysRequired(app, settings)
    return LoopbackOnly
