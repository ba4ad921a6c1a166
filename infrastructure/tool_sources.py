"""The tools a process offers: built-ins, plugins (entry points) and MCP servers, by name.

Without ``HARNESS_TOOLS_CONFIG`` only the four built-in tools are offered, as always. With it,
the file chooses the built-ins, the plugins and the MCP servers; every server is started and
listed here, once, and a tool or plugin that does not exist, or a server that cannot be reached,
is a ConfigurationError naming it, before any run starts. Every tool considered is kept with
its admission (``application.tool_admission``): a name another source already offers, or one a
model provider would refuse, is refused and left out of the tools by name; a tool that is not
read-only stays there, so a request for it is refused at preflight naming the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from application.ports import JSON, Tool, ToolOutput, stays_local
from application.tool_admission import Refusal, admission_of, shown_name
from infrastructure.mcp_client import McpConnection, McpServerError
from infrastructure.mcp_tools import McpTool
from infrastructure.settings import ConfigurationError
from infrastructure.tool_catalog import ToolView, summary_lines, view_of, views_of
from infrastructure.tool_config import ToolsConfig, ToolsConfigError, load_tools_config
from infrastructure.tools import builtin_tools

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from infrastructure.tool_config import HttpServer, StdioServer

PLUGIN_GROUP = "harness.tools"

log = logging.getLogger(__name__)
_LEFT_OUT = (Refusal.INVALID_NAME, Refusal.SCHEMA)


@dataclass
class ToolSources:
    """The tools by name, every tool considered, and the MCP connections to close."""

    tools: dict[str, Tool] = field(default_factory=dict)
    """The tools runs may ask for: admitted ones, and read-only refusals (preflight names why)."""
    connections: list[McpConnection] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)
    offered: list[tuple[Tool, str, str | None]] = field(default_factory=list)
    """Every tool of every source in order: the tool, its origin, the origin it clashed with."""
    logs: dict[str, Path] = field(default_factory=dict)
    """Each stdio MCP server's stderr log, by origin."""

    def add(self, tool: Tool, origin: str) -> None:
        """Consider ``tool``; a name already offered, one models refuse, or a bad schema is refused.

        Those three are left out of the tools by name (a request for one is an unknown tool);
        a tool refused for not being read-only stays, so preflight can name the setting.
        """
        clash = self.origins.get(tool.name)
        self.offered.append((tool, origin, clash))
        if clash is None and admission_of(tool).refusal not in _LEFT_OUT:
            self.tools[tool.name] = tool
            self.origins[tool.name] = origin

    def views(self) -> list[ToolView]:
        """Every tool considered, with its admission as of now."""
        return [view_of(tool, origin, clash) for tool, origin, clash in self.offered]

    def announce(self) -> None:
        """Log one summary line per source (admitted, refused and why, the stderr log)."""
        for line in summary_lines(self.views(), self.logs):
            log.info("%s", line)

    def close(self) -> None:
        """Close every MCP session (stdio servers' processes end)."""
        while self.connections:
            self.connections.pop().close()


def assemble_tools(
    config_path: Path | None, engine: Engine, *, announce: bool = False
) -> ToolSources:
    """The configured tools; ConfigurationError naming what is wrong (nothing is left open).

    ``announce`` logs one summary line per source (see :meth:`ToolSources.announce`) when a
    configuration chose them (the built-ins alone, the default, go without saying).
    """
    sources = _assembled(config_path, engine)
    if announce and config_path is not None:
        sources.announce()
    return sources


def tool_views(tools: Mapping[str, Tool], sources: ToolSources | None) -> list[ToolView]:
    """What runs with ``tools`` may ask for, and what ``sources`` refused when offered."""
    return views_of(tools, sources.offered if sources is not None else [])


def _assembled(config_path: Path | None, engine: Engine) -> ToolSources:
    sources = ToolSources()
    builtins = builtin_tools(engine)
    if config_path is None:
        for tool in builtins:
            sources.add(tool, "builtin")
        return sources
    try:
        config = load_tools_config(config_path)
        _add_builtins(sources, builtins, config)
        for name in config.plugins:
            for tool in load_plugin(name):
                sources.add(tool, f"plugin:{name}")
        for name, server in config.servers.items():
            _add_server(sources, name, server, Path(config.log_dir))
    except ToolsConfigError as error:
        sources.close()
        raise ConfigurationError(str(error)) from None
    except BaseException:
        sources.close()
        raise
    return sources


def _add_builtins(sources: ToolSources, builtins: list[Tool], config: ToolsConfig) -> None:
    known = {tool.name: tool for tool in builtins}
    if config.builtin == "none":
        return
    names = list(known) if config.builtin == "all" else config.builtin
    for name in names:
        if name not in known:
            raise ConfigurationError(
                f"builtin: no built-in tool {name!r}; there are {', '.join(sorted(known))}"
            )
        sources.add(known[name], "builtin")


def _add_server(
    sources: ToolSources, name: str, server: StdioServer | HttpServer, log_dir: Path
) -> None:
    connection = McpConnection(name, server, stderr_log=log_dir / f"mcp-{name}.log")
    sources.connections.append(connection)
    if connection.stderr_log is not None:
        sources.logs[f"mcp:{name}"] = connection.stderr_log
    try:
        listed = connection.start()
    except McpServerError as error:
        raise ConfigurationError(f"servers.{name}: {error}") from None
    wanted = list(listed) if server.expose == "all" else server.expose
    for tool_name in [*wanted, *server.tools]:
        if tool_name not in listed:
            names = [shown_name(n) for n in sorted(listed)]
            offered = ", ".join(names[:50]) + (", …" if len(names) > 50 else "") or "none"
            raise ConfigurationError(
                f"servers.{name}: the server has no tool {tool_name!r}; it offers {offered}"
            )
        if server.expose != "all" and tool_name not in wanted:
            raise ConfigurationError(
                f"servers.{name}.tools.{tool_name}: configured but not in expose"
            )
    for tool_name in dict.fromkeys(wanted):
        options = server.options(tool_name)
        tool = McpTool(
            connection,
            listed[tool_name],
            options,
            prefix=server.prefix,
            redactor=connection.redactor,  # what it was handed, hidden before any cut
        )
        sources.add(tool, f"mcp:{name}")  # a bad schema is a refusal with its reason


def load_plugin(name: str) -> list[Tool]:
    """The tools the ``harness.tools`` entry point ``name`` returns, each checked."""
    found = [ep for ep in entry_points(group=PLUGIN_GROUP) if ep.name == name]
    if not found:
        known = ", ".join(sorted({ep.name for ep in entry_points(group=PLUGIN_GROUP)})) or "none"
        raise ConfigurationError(
            f"plugins: no entry point {name!r} in group {PLUGIN_GROUP}; installed: {known}"
        )
    where = f"plugin {name!r} ({found[0].value})"
    try:
        made = found[0].load()()
    except Exception as error:
        detail = (str(error).splitlines() or [""])[0][:200]
        raise ConfigurationError(f"{where} failed: {type(error).__name__}: {detail}") from None
    if not isinstance(made, Iterable) or isinstance(made, str | bytes | Mapping):
        raise ConfigurationError(f"{where} returned {type(made).__name__}, not a list of tools")
    return [PluginTool(_checked(item, where), name) for item in made]


def _checked(item: object, where: str) -> Tool:
    if not isinstance(item, Tool):
        raise ConfigurationError(f"{where} returned a {type(item).__name__}, not a Tool")
    kinds = {"name": str, "description": str, "required_scope": str, "read_only": bool}
    kinds |= {"blocking": bool, "max_result_bytes": int}
    for attribute, kind in kinds.items():
        if not isinstance(getattr(item, attribute), kind):
            raise ConfigurationError(f"{where}: a tool's {attribute} is not {kind.__name__}")
    if not item.name.strip() or not isinstance(item.parameters, Mapping):
        raise ConfigurationError(f"{where}: a tool has no name or its parameters are not a schema")
    if item.max_result_bytes < 1:
        raise ConfigurationError(f"{where}: {item.name}'s max_result_bytes is not positive")
    return item


class PluginTool:
    """A plugin's tool, with its attributes read once and its origin named for the log."""

    def __init__(self, tool: Tool, plugin: str) -> None:
        """Wrap ``tool`` of entry point ``plugin``."""
        self.tool = tool
        self.name = tool.name
        self.description = tool.description
        self.parameters: JSON = tool.parameters
        self.read_only = tool.read_only
        self.required_scope = tool.required_scope
        self.max_result_bytes = tool.max_result_bytes
        self.blocking = tool.blocking
        self.local = stays_local(tool)  # the plugin's own word, as for read_only
        self.origin = f"plugin:{plugin}"

    def normalize_scope(self, arguments: JSON) -> str:
        """The plugin's canonical scope."""
        return self.tool.normalize_scope(arguments)

    def run(self, arguments: JSON) -> ToolOutput:
        """The plugin's result."""
        return self.tool.run(arguments)
