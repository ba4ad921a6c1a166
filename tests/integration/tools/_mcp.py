"""What the MCP tests share: tools configurations written to files and scripted runs over them."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bootstrap.composition import Services
from infrastructure.tool_sources import ToolSources, assemble_tools

HOSTILE = Path(__file__).resolve().parents[2] / "mcp_servers" / "hostile.py"
HARNESS_BIN = Path(sys.executable).parent / "harness"


def toml_value(value: Any) -> str:
    """A TOML literal of a string, number, bool or list of strings (JSON spells them alike)."""
    return json.dumps(value)


def write_config(
    path: Path,
    servers: dict[str, dict[str, Any]],
    *,
    builtin: str = "none",
    log_dir: Path | None = None,
) -> Path:
    """A tools configuration with ``servers`` (nested ``tools`` tables allowed).

    The servers' stderr logs go to ``log_dir`` (by default ``logs`` beside the file).
    """
    logs = log_dir or path.parent / "logs"
    lines = [f"builtin = {toml_value(builtin)}", f"log_dir = {toml_value(str(logs))}"]
    for name, server in servers.items():
        lines.append(f"[servers.{name}]")
        options = server.pop("tools", {})
        env = server.pop("env", {})
        lines += [f"{key} = {toml_value(value)}" for key, value in server.items()]
        if env:
            pairs = ", ".join(f"{k} = {toml_value(v)}" for k, v in env.items())
            lines.append(f"env = {{ {pairs} }}")
        for tool, settings in options.items():
            lines.append(f"[servers.{name}.tools.{tool}]")
            lines += [f"{key} = {toml_value(value)}" for key, value in settings.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def hostile(tmp_path: Path, mode: str, **extra: Any) -> dict[str, Any]:
    """A stdio server entry for the hostile server in ``mode``, its files under ``tmp_path``."""
    env = {
        "HOSTILE_MARKER": str(tmp_path / "called"),
        "HOSTILE_STARTS": str(tmp_path / "starts"),
    }
    return {"transport": "stdio", "command": sys.executable, "args": [str(HOSTILE), mode]} | {
        "env": env,
        **extra,
    }


def calls(tmp_path: Path) -> list[str]:
    """The tool calls the hostile server received (``START NAME`` lines)."""
    marker = tmp_path / "called"
    return marker.read_text().splitlines() if marker.exists() else []


def starts(tmp_path: Path) -> int:
    """How many times the hostile server was started."""
    path = tmp_path / "starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


@contextmanager
def configured(services: Services, config: Path) -> Iterator[ToolSources]:
    """The tools of ``config`` over ``services``' engine, closed afterwards."""
    sources = assemble_tools(config, services.engine)
    try:
        yield sources
    finally:
        sources.close()


def one_call(tool: str, arguments: dict[str, Any], deadline_s: float = 30.0) -> dict[str, Any]:
    """A scripted diagnosis that calls ``tool`` once and then gives up (a fallback)."""
    return {
        "route": "DIAGNOSIS",
        "deadline_s": deadline_s,
        "steps": [
            {"tool": tool, "arguments": arguments},
            {"draft": {"conclusion": None, "facts": [], "missing_info": []}},
        ],
    }


def pids(tmp_path: Path) -> list[int]:
    """The process ids of the hostile server's starts."""
    path = tmp_path / "starts"
    return [int(line) for line in path.read_text().splitlines()] if path.exists() else []


def alive(pid: int) -> bool:
    """Whether process ``pid`` still exists (a reaped child does not)."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
