"""Scripted tools: each answers from the scenario's ``tools`` section, result by result.

A product feature like the scripted model provider: a scenario can make a tool return lines,
fail, raise, wait, hang (in its run, or in its argument check) or return too much, to drive the
tool boundary through the real runtime.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from application.ports import ToolArgumentsError, ToolExecutionError, ToolOutput
from infrastructure.scripted_play import ScenarioError, hold

if TYPE_CHECKING:
    from application.ports import JSON
    from infrastructure.scripted_play import Play


@dataclass
class ScriptedTool:
    """A tool whose results come from the scenario's ``tools`` section, in call order."""

    name: str
    config: dict[str, Any]
    description: str = "A scripted tool."
    parameters: JSON = field(default_factory=lambda: {"type": "object"})
    read_only: bool = True
    required_scope: str = "ops:read"
    max_result_bytes: int = 8000
    blocking: bool = True  # delay and hang results wait
    known_services: tuple[str, ...] = ()
    """The services the tool knows (its catalogue; ``known_services`` in the scenario)."""
    play: Play | None = None
    """The provider's play: a new one (a new run) starts the results from the first again."""
    calls: int = 0
    _played: int = 0
    hanging: threading.Event = field(default_factory=threading.Event)
    """Set when a ``hang`` result has started waiting (lets a caller act while the tool runs)."""
    _released: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        """Take the declared capabilities from the scenario."""
        self.read_only = bool(self.config.get("read_only", True))
        self.required_scope = str(self.config.get("required_scope", "ops:read"))
        self.max_result_bytes = int(self.config.get("max_result_bytes", 8000))
        self.description = str(self.config.get("description", self.description))
        self.known_services = tuple(str(s) for s in self.config.get("known_services", ()))

    def normalize_scope(self, arguments: JSON) -> str:
        """Arguments as canonical JSON; anything but an object is invalid.

        ``scope_hang: true`` makes the check itself block until :meth:`release` (an argument
        check that never returns: a schema that fetches a URL, a lock held elsewhere).
        """
        hold({"hang": self.config.get("scope_hang", False)}, self.hanging, self._released)
        if not isinstance(arguments, dict):
            raise ToolArgumentsError("arguments must be a JSON object")
        missing = [k for k in self.config.get("required", []) if k not in arguments]
        if missing:
            raise ToolArgumentsError(f"missing required argument {missing[0]!r}")
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"))

    def release(self) -> None:
        """Unblock results that ``hang`` (a backend call that never answers on its own)."""
        self._released.set()

    def run(self, arguments: JSON) -> ToolOutput:
        """The next scripted result: lines, an error, a raise, a delay, a hang or a size.

        ``hang: true`` blocks until :meth:`release`, then goes on with the rest of the result;
        ``notes`` are the tool's own words about it (a limit it applied), apart from the lines.
        """
        if self.play is not None and self.play.number != self._played:
            self._played, self.calls = self.play.number, 0
        results = self.config.get("results") or [self.config]
        result = results[min(self.calls, len(results) - 1)]
        self.calls += 1
        hold(result, self.hanging, self._released)
        if "raise" in result:
            raise RuntimeError(str(result["raise"]))
        if "error" in result:
            raise ToolExecutionError("BACKEND", str(result["error"]))
        lines = [str(line) for line in result.get("lines", [])]
        if "size" in result:
            lines = [f"{'x' * 99}" for _ in range(int(result["size"]) // 100 + 1)]
        scope = str(result.get("scope", f"{self.name} {self.normalize_scope(arguments)}"))
        notes = tuple(str(note) for note in result.get("notes", []))
        return ToolOutput(tuple(lines), scope, notes)


def scripted_tools(scenario: dict[str, Any], play: Play | None = None) -> dict[str, ScriptedTool]:
    """The scenario's tools by name (with ``play``, each run starts their results afresh)."""
    tools = scenario.get("tools", {})
    if not isinstance(tools, dict):
        raise ScenarioError("'tools' must be a mapping of tool name to its results")
    return {
        name: ScriptedTool(name, dict(config or {}), play=play) for name, config in tools.items()
    }
