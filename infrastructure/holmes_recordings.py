"""HolmesGPT's recorded tool outputs, read strictly, and the fixture tools made of them.

A recording is a ``*.txt`` file beside a HolmesGPT ``test_case.yaml``: line 1 is a JSON header
(``toolset_name``, ``tool_name``, ``match_params``), line 2 the structured result (``status``,
``error``, …) and the lines after it the output itself. The recordings of one tool name become
one fixture tool whose results are matched by their ``match_params``, the most specific first
(the first match wins), as HolmesGPT's own mock loader matches them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

STATUSES = frozenset({"success", "error", "no_data", "approval_required"})
"""The ``status`` values of HolmesGPT's structured tool results."""


class HolmesImportError(ValueError):
    """A HolmesGPT folder the importer cannot read: ``path: field: what is wrong``."""


def read_recording(path: Path) -> dict[str, Any] | None:
    """One recorded tool output, or None for a ``.txt`` that is not one (line 1 is no JSON).

    The result is what a fixture result needs: the tool's name and toolset, the file, its
    ``match`` parameters if it has any, and either its output ``lines`` or its ``error``.
    """
    lines = _lines_of(path)
    if not lines or not lines[0].lstrip().startswith("{"):
        return None  # notes or logs beside the case: HolmesGPT skips them too
    tool, toolset, params = _header(path, lines)
    result = _json_line(path, lines, 2, "structured result")
    status = result.get("status")
    if status not in STATUSES:
        raise HolmesImportError(
            f"{path}: line 2: status: {status!r} is not one of {sorted(STATUSES)}"
        )
    recorded: dict[str, Any] = {"tool": tool, "file": path.name, "toolset": toolset}
    if params:
        recorded["match"] = params
    if status in ("error", "approval_required"):
        recorded["error"] = str(result.get("error") or status).strip() or status
    elif status == "success":
        # The output follows the two JSON lines; an older recording keeps it in ``data``.
        body = lines[2:] or str(result.get("data") or "").splitlines()
        recorded["lines"] = [line for line in body if line.strip()]
    else:  # no_data: the tool answered, with nothing
        recorded["lines"] = []
    return recorded


def _lines_of(path: Path) -> list[str]:
    """The file's lines; HolmesImportError naming the file when it cannot be read as text."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise HolmesImportError(f"{path}: cannot read it: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise HolmesImportError(f"{path}: not UTF-8 text") from None
    return text.splitlines()


def _header(path: Path, lines: list[str]) -> tuple[str, str, dict[str, Any] | None]:
    """Line 1 read: the tool's name, its toolset ('' if unnamed) and its match parameters."""
    header = _json_line(path, lines, 1, "header")
    tool, params = header.get("tool_name"), header.get("match_params")
    if not isinstance(tool, str) or not tool.strip():
        raise HolmesImportError(f"{path}: line 1: tool_name: missing or not a text")
    if params is not None and not isinstance(params, dict):
        raise HolmesImportError(f"{path}: line 1: match_params: not an object or null")
    return tool.strip(), str(header.get("toolset_name") or ""), params


def _json_line(path: Path, lines: list[str], number: int, what: str) -> dict[str, Any]:
    """Line ``number`` (from 1) as a JSON object, or HolmesImportError saying what it is."""
    if len(lines) < number:
        raise HolmesImportError(f"{path}: line {number}: missing (the {what} JSON)")
    try:
        value = json.loads(lines[number - 1])
    except json.JSONDecodeError as error:
        raise HolmesImportError(f"{path}: line {number}: bad {what} (not JSON: {error})") from None
    if not isinstance(value, dict):
        raise HolmesImportError(f"{path}: line {number}: bad {what} (not a JSON object)")
    return value


def recorded_tools(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One fixture tool per recorded tool name; its most specific recordings first."""
    tools: dict[str, list[dict[str, Any]]] = {}
    for item in recorded:
        tools.setdefault(item["tool"], []).append(item)
    return [_tool(name, items) for name, items in sorted(tools.items())]


def _tool(name: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """A fixture tool answering with ``items``; its parameters are every match key they use."""
    items = sorted(items, key=lambda item: (-len(item.get("match", {})), item["file"]))
    toolset = next((item["toolset"] for item in items if item["toolset"]), "")
    keys = {key: value for item in items for key, value in item.get("match", {}).items()}
    properties = {key: {"type": _json_type(value)} for key, value in sorted(keys.items())}
    results = [{k: item[k] for k in ("match", "lines", "error") if k in item} for item in items]
    return {
        "name": name,
        "description": f"{name} of HolmesGPT's {toolset or 'unnamed'} toolset (recorded outputs)",
        "parameters": {"type": "object", "properties": properties},
        "results": results,
    }


JSON_TYPES: dict[type, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    list: "array",
    dict: "object",
}
"""The JSON-schema type of a match parameter's value, by its Python type (else a string)."""


def _json_type(value: object) -> str:
    """The JSON-schema type a match parameter with ``value`` gets (null and text: string)."""
    return JSON_TYPES.get(type(value), "string")
