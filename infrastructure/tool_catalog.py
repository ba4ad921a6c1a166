"""What a reader is shown of the tools: each with its origin, annotations, admission and schema.

``harness tools list``, ``GET /v1/tools`` and the start-up summary (one line per source) read
these views; the admission in each is :func:`application.tool_admission.admission_of`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from application.tool_admission import AdmittedBy, admission_of, shown_name

if TYPE_CHECKING:
    from pathlib import Path

    from application.ports import JSON, Tool
    from application.tool_admission import Admission

SUMMARY_NAMES = 20
"""Refused (or specially admitted) tools a summary line names before it counts the rest."""


@dataclass(frozen=True)
class ToolView:
    """One tool as a reader sees it."""

    name: str
    """The name, as :func:`~application.tool_admission.shown_name` shows it (an invalid one is
    quoted, escaped and cut: it cannot split a line)."""
    origin: str
    """``builtin``, ``plugin:NAME`` or ``mcp:SERVER`` (a scripted tool says ``builtin``)."""
    description: str
    input_schema: JSON
    annotations: dict[str, Any]
    """An MCP tool's annotations as its server last listed them; {} for other tools."""
    admission: Admission


def view_of(tool: Tool, origin: str | None = None, clash: str | None = None) -> ToolView:
    """The view of ``tool`` (``origin``: its source, by default its own word or ``builtin``)."""
    notes = getattr(tool, "annotations", None)
    return ToolView(
        name=shown_name(tool.name),
        origin=origin or str(getattr(tool, "origin", "builtin")),
        description=tool.description,
        input_schema=tool.parameters if isinstance(tool.parameters, Mapping) else {},
        annotations=dict(notes) if isinstance(notes, Mapping) else {},
        admission=admission_of(tool, clash),
    )


def views_of(
    tools: Mapping[str, Tool], offered: Sequence[tuple[Tool, str, str | None]]
) -> list[ToolView]:
    """The views of the tools runs use (``tools``) and of those refused when they were offered.

    ``offered`` is every tool a :class:`~infrastructure.tool_sources.ToolSources` considered,
    with its origin and clash; a tool of ``tools`` that none of them is (a scripted tool, a
    test's) is shown by its own word.
    """
    views = [
        view_of(tool, origin, clash)
        for tool, origin, clash in offered
        if clash is not None or tools.get(tool.name) in (None, tool)
    ]
    listed = {id(tool) for tool, _, _ in offered}
    return views + [view_of(tool) for tool in tools.values() if id(tool) not in listed]


def summary_lines(views: list[ToolView], logs: Mapping[str, Path]) -> list[str]:
    """One line per source, in the order the sources were added.

    ``tools from mcp:git: 8 admitted, 4 refused (git_commit: readOnlyHint false; …); its
    stderr goes to logs/mcp-git.log``; ``logs`` maps an origin to its stderr log file.
    """
    origins = list(dict.fromkeys(view.origin for view in views))
    return [
        _summary(origin, [view for view in views if view.origin == origin], logs.get(origin))
        for origin in origins
    ]


def _summary(origin: str, views: list[ToolView], log: Path | None) -> str:
    admitted = [view for view in views if view.admission.admitted]
    refused = [view for view in views if not view.admission.admitted]
    allowed = [v.name for v in admitted if v.admission.by is AdmittedBy.ALLOW_NOT_READ_ONLY]
    text = f"tools from {origin}: {len(admitted)} admitted"
    if allowed:
        text += f" ({_names([f'{name} by allow_not_read_only' for name in allowed])})"
    text += f", {len(refused)} refused"
    if refused:
        reasons = [f"{view.name}: {view.admission.refusal}" for view in refused]
        text += f" ({_names(reasons)})"
    if log is not None:
        text += f"; its stderr goes to {log}"
    return text


def _names(items: list[str]) -> str:
    shown = "; ".join(items[:SUMMARY_NAMES])
    more = len(items) - SUMMARY_NAMES
    return f"{shown}; and {more} more (see harness tools list)" if more > 0 else shown
