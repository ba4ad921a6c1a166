"""Time inside the ports: the model and tool calls of a harness run, timed where they run.

The wrappers keep what the harness reads of a port besides its calls: whether it blocks (and a
tool's argument check does), whether it stays local (:func:`~application.ports.stays_local`) and
whether a model waits at a send gate, so a timed run calls and commits exactly as an untimed one.
With ``--model external`` the model's time is the HTTP exchanges with the stub
(:func:`bench.model_external.time_http`), not the whole ``complete`` call.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from application.ports import gated, stays_local
from application.tool_port import checks_block
from bench.model_external import time_http
from infrastructure.model_openai import OpenAICompatibleProvider

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.ports import JSON, ModelProvider, ModelRequest, ModelResponse, Tool, ToolOutput
    from bootstrap.composition import Services


@dataclass(frozen=True)
class PortSeconds:
    """One run's seconds inside its model calls and inside its tool calls, and its model calls."""

    model: float = 0.0
    tools: float = 0.0
    model_calls: int = 0

    @property
    def total(self) -> float:
        """Seconds inside any port."""
        return self.model + self.tools


class PortTimer:
    """Adds up the seconds spent inside model and tool calls, per run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current = PortSeconds()
        self.runs: list[PortSeconds] = []

    def add_model(self, seconds: float) -> None:
        """Count one model call (called from the thread that made it)."""
        with self._lock:
            now = self._current
            self._current = PortSeconds(now.model + seconds, now.tools, now.model_calls + 1)

    def add_tool(self, seconds: float) -> None:
        """Count one tool call (called from the thread that made it)."""
        with self._lock:
            now = self._current
            self._current = PortSeconds(now.model, now.tools + seconds, now.model_calls)

    def wrap(self, run: Callable[[], object]) -> Callable[[], object]:
        """``run`` that records its port seconds in :attr:`runs`."""

        def timed() -> object:
            with self._lock:
                self._current = PortSeconds()
            result = run()
            with self._lock:
                self.runs.append(self._current)
            return result

        return timed


class TimedProvider:
    """A model provider whose ``complete`` is timed."""

    def __init__(self, inner: ModelProvider, timer: PortTimer) -> None:
        self.name = inner.name
        self.blocking = inner.blocking
        self.local = stays_local(inner)
        self.gated = gated(inner)
        self._inner = inner
        self._timer = timer

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Delegate and time."""
        began = time.perf_counter()
        try:
            return self._inner.complete(request)
        finally:
            self._timer.add_model(time.perf_counter() - began)


class TimedTool:
    """A tool whose ``run`` is timed; scope normalisation stays harness time."""

    def __init__(self, inner: Tool, timer: PortTimer) -> None:
        self.name = inner.name
        self.description = inner.description
        self.parameters = inner.parameters
        self.read_only = inner.read_only
        self.required_scope = inner.required_scope
        self.max_result_bytes = inner.max_result_bytes
        self.blocking = inner.blocking
        self.checks_block = checks_block(inner)
        self.local = stays_local(inner)
        self._inner = inner
        self._timer = timer

    def normalize_scope(self, arguments: JSON) -> str:
        """Delegate (untimed: it is the harness's preflight)."""
        return self._inner.normalize_scope(arguments)

    def run(self, arguments: JSON) -> ToolOutput:
        """Delegate and time."""
        began = time.perf_counter()
        try:
            return self._inner.run(arguments)
        finally:
            self._timer.add_tool(time.perf_counter() - began)


def time_ports(runtime: Services) -> PortTimer:
    """Time the runtime's model calls and tools: its HTTP exchanges, or its provider's calls."""
    timer = PortTimer()
    service = runtime.chat
    if isinstance(service.provider, OpenAICompatibleProvider):
        time_http(service.provider.http, timer.add_model)  # the client completions are posted with
    else:
        service.provider = TimedProvider(service.provider, timer)
    service.tools = {name: TimedTool(tool, timer) for name, tool in service.tools.items()}
    return timer
