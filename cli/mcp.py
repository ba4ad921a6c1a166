"""``harness mcp …``: the harness as an MCP server, and one over the shipped sample data.

``harness mcp serve`` offers the harness itself to other agents (:mod:`api.mcp_server`): ask
or diagnose a question and get what the run published, list and explain runs, read them as
resources. Over stdio it answers whoever started it (the local admin, as the CLI); over
Streamable HTTP (``--http``) it takes the API's keys and roles.

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
    import socket
    from collections.abc import Callable

    from starlette.types import ASGIApp

    from infrastructure.settings import Settings

mcp_app = typer.Typer(
    help="Serve the harness, or the sample operations data, as an MCP server.",
    no_args_is_help=True,
)
LISTEN_BACKLOG = 2048
"""uvicorn's default backlog, used from the moment the URL is printed."""
HttpOption = Annotated[
    bool, typer.Option("--http", help="Serve Streamable HTTP at /mcp instead of stdio.")
]
HostOption = Annotated[str, typer.Option(help="Bind address with --http.")]
PortOption = Annotated[int, typer.Option(min=0, max=65535, help="Port with --http (0: any).")]


@mcp_app.command("serve")
def serve(
    http: HttpOption = False, host: HostOption = "127.0.0.1", port: PortOption = 8766
) -> None:
    """Serve the harness: tools ask, diagnose, list_runs, explain_run; runs as resources.

    Uses the configured store and model (HARNESS_*), as ``harness serve``. A cancelled ask
    cancels its run. Over --http without HARNESS_API_KEYS it binds to loopback only.
    """
    import anyio

    from api.main import opened_worker
    from api.mcp_server import harness_server
    from cli.common import load_settings, settings_for_work
    from cli.serve import check_port, refuse_exposed
    from infrastructure.mcp_serve import serve_http, serve_stdio

    if http:  # before any set-up, as `harness serve`
        refuse_exposed(bool(load_settings().api_keys), host, "read and start runs")
    sock = check_port(host, port) if http else None  # a taken port: one line, exit 2
    settings = settings_for_work()  # the embedded default made here, as `harness serve` does
    with opened_worker(settings) as worker:
        server = harness_server(worker)
        if sock is None:
            anyio.run(serve_stdio, server)
            return
        _announce(sock)
        serve_http(server, sock, _guard(settings))


@mcp_app.command("serve-sample")
def serve_sample(
    http: HttpOption = False, host: HostOption = "127.0.0.1", port: PortOption = 8765
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
            _announce(sock)
            serve_http(server, sock, _guard(settings))


def _announce(sock: socket.socket) -> None:
    """Listen, then say where, on stderr: a client that reads the URL can connect at once.

    Connections wait in the backlog until uvicorn accepts them (it listens on the same socket).
    """
    sock.listen(LISTEN_BACKLOG)
    bound_host, bound_port = sock.getsockname()[:2]
    err_console().print(f"serving MCP on http://{bound_host}:{bound_port}/mcp")


def _guard(settings: Settings) -> Callable[[ASGIApp], ASGIApp]:
    """With keys: a key on every request; without: this machine's own clients only."""
    from api.auth import KeysRequired, LoopbackOnly

    if settings.api_keys:
        return lambda app: KeysRequired(app, settings)
    return LoopbackOnly
