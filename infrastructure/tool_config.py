"""The tools configuration (``HARNESS_TOOLS_CONFIG``): built-in tools, plugins and MCP servers.

A TOML (or YAML) file read once at start. Every table forbids unknown keys, so a typo is an
error naming the file and the field, never a silently ignored setting. Secrets never appear in
the file: a stdio server's environment and an HTTP server's headers may name variables of the
harness's own environment (``env_from``, ``headers_from_env``), whose values are read at start.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

if TYPE_CHECKING:
    from collections.abc import Mapping

DEFAULT_SCOPE = "ops:read"
DEFAULT_CALL_TIMEOUT_S = 30.0
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""``max_message_bytes`` unless set: far above a real tool listing or the 8,000 bytes of a result
the harness keeps, far below what would swell a worker (``infrastructure.mcp_lines`` says it)."""
_NAME = re.compile(r"\A[A-Za-z0-9_.-]{1,64}\Z")


def _tool_name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{value!r} is not a tool name (letters, digits, _ . -; 1 to 64)")
    return value


ToolName = Annotated[str, AfterValidator(_tool_name)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolOptions(_Strict):
    """Settings of one exposed MCP tool."""

    scope: str = Field(DEFAULT_SCOPE, min_length=1, description="Scope a run needs to call it.")
    allow_not_read_only: bool = False
    """Admit the tool although its annotations do not say ``readOnlyHint: true`` (recorded)."""


class _Server(_Strict):
    expose: Literal["all"] | list[ToolName] = "all"
    """The server's tools the agent may see: all of them, or these names."""
    prefix: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,32}$")
    """Put before each tool's name (e.g. ``ops_``), to keep names from two sources apart."""
    scope: str = Field(DEFAULT_SCOPE, min_length=1, description="Every tool's scope by default.")
    call_timeout: float = Field(DEFAULT_CALL_TIMEOUT_S, gt=0, le=3600)
    """Seconds one call may take (the run's deadline bounds it too); the start-up and its listing
    get this or 15 s, whichever is longer."""
    max_message_bytes: int = Field(DEFAULT_MAX_MESSAGE_BYTES, ge=1024, le=1 << 30)
    """The largest message read from the server (a stdio line): a longer one is skipped while
    it streams, the call it answered fails with SIZE, and a tool listing that long stops the
    start; 4 MiB by default."""
    tools: dict[ToolName, ToolOptions] = Field(default_factory=dict)
    """Per-tool settings, by the server's own tool name."""

    def options(self, name: str) -> ToolOptions:
        """The settings of the server's tool ``name`` (the server's defaults when unset)."""
        return self.tools.get(name) or ToolOptions(scope=self.scope)


class StdioServer(_Server):
    """An MCP server the harness starts as a child process and talks to over stdin/stdout."""

    transport: Literal["stdio"]
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for the server, as written (no secrets here: use ``env_from``)."""
    env_from: dict[str, str] = Field(default_factory=dict)
    """Variables set for the server from the harness's own: ``{SERVER_VAR = "HARNESS_VAR"}``."""
    cwd: str | None = None


class HttpServer(_Server):
    """An MCP server reached over Streamable HTTP."""

    transport: Literal["http"]
    url: str = Field(pattern=r"^https?://")
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    """Request headers whose values are read from the harness's environment, by name."""


ServerConfig = Annotated[StdioServer | HttpServer, Field(discriminator="transport")]


class ToolsConfig(_Strict):
    """The whole tools configuration file."""

    builtin: Literal["all", "none"] | list[ToolName] = "all"
    """The built-in ops tools: all of them (the default), none, or these names."""
    plugins: list[str] = Field(default_factory=list)
    """Names of entry points in the ``harness.tools`` group whose tools are added."""
    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    """MCP servers by a name of your choosing (it appears in the run's events)."""
    log_dir: str = Field("logs", min_length=1)
    """Folder of the stdio servers' stderr logs, ``mcp-NAME.log`` (relative: to the working
    directory); each is rotated at 5 MB, one older file kept."""

    @field_validator("builtin", mode="before")
    @classmethod
    def _builtin_shape(cls, value: object) -> object:
        if value in ("all", "none") or isinstance(value, list):
            return value
        raise ValueError('must be "all", "none" or a list of built-in tool names')

    @field_validator("servers")
    @classmethod
    def _server_names(cls, servers: dict[str, Any]) -> dict[str, Any]:
        for name in servers:
            if not _NAME.match(name):
                raise ValueError(f"{name!r} is not a server name (letters, digits, _ . -)")
        return servers


class ToolsConfigError(ValueError):
    """The tools configuration cannot be read or is invalid; the message names file and field."""


def load_tools_config(path: str | Path) -> ToolsConfig:
    """Read and validate the file at ``path`` (``.toml``, ``.yaml`` or ``.yml``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise ToolsConfigError(f"{path}: cannot read it ({reason})") from None
    data = _parse(path, text)
    try:
        return ToolsConfig.model_validate(data)
    except ValidationError as error:
        raise ToolsConfigError(f"{path}: {describe(error)}") from None


def _parse(path: Path, text: str) -> object:
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            return yaml.safe_load(text) or {}
        except yaml.YAMLError as error:
            where = getattr(error, "problem_mark", None)
            line = f" at line {where.line + 1}" if where is not None else ""
            raise ToolsConfigError(f"{path}: not valid YAML{line}") from None
    if path.suffix.lower() != ".toml":
        raise ToolsConfigError(f"{path}: name a .toml, .yaml or .yml file")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ToolsConfigError(f"{path}: not valid TOML ({error})") from None


def describe(error: ValidationError) -> str:
    """Each problem as ``field.path: message``, joined by ``; `` (one line)."""
    found: list[tuple[str, str]] = []
    for item in error.errors():
        parts = [str(p) for p in item["loc"]]
        if parts[:1] == ["servers"] and len(parts) > 2 and parts[2] in ("stdio", "http"):
            del parts[2]  # the discriminated union's tag, not a field of the file
        parts = [p for p in parts if "[" not in p]  # a union member's tag, not a field either
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field (check its spelling)"
        found.append((".".join(parts), message))
    wheres = {where for where, _ in found}
    deepest = [  # of a union's answers, the one that went deepest names the problem
        (where, message)
        for where, message in found
        if not any(other.startswith(f"{where}.") for other in wheres)
    ]
    return "; ".join(f"{where or 'the file'}: {message}" for where, message in deepest)


def check_tools_config(value: Path | None) -> Path | None:
    """Settings' validator: the file must exist and be valid, or the setting is refused."""
    if value is not None:
        load_tools_config(value)
    return value


def from_environment(
    names: Mapping[str, str], what: str, environ: Mapping[str, str]
) -> dict[str, str]:
    """``{key: environ[var]}`` for each ``key = var``; a ToolsConfigError names a missing one."""
    values = {}
    for key, var in names.items():
        if var not in environ:
            raise ToolsConfigError(f"{what}: {key} is to come from ${var}, which is not set")
        values[key] = environ[var]
    return values


def server_environment(
    server: StdioServer, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables to set for a stdio server: its ``env`` and its ``env_from`` values."""
    environ = os.environ if environ is None else environ
    return server.env | from_environment(server.env_from, "env_from", environ)


def server_secrets(server: StdioServer | HttpServer, environ: Mapping[str, str]) -> list[str]:
    """The values ``server`` is handed from the environment (``env_from``, ``headers_from_env``).

    Each is a secret: what a server echoes of them is redacted (put plain values in ``env``).
    """
    names = server.env_from if isinstance(server, StdioServer) else server.headers_from_env
    return [environ[var] for var in names.values() if var in environ]
