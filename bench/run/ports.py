"""Time inside the ports: the model and tool calls of a harness run, timed where they run."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.ports import JSON, ModelProvider, ModelRequest, ModelResponse, Tool, ToolOutput
    from bootstrap.composition import Services


class PortTimer:
    """Adds up the seconds spent inside model and tool calls, per harness run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current = 0.0
        self.runs: list[float] = []

    def add(self, seconds: float) -> None:
        """Count one port call (called from the pool thread that made it)."""
        with self._lock:
            self._current += seconds

    def wrap(self, run: Callable[[], object]) -> Callable[[], object]:
        """``run`` that records its port seconds in :attr:`runs`."""

        def timed() -> object:
            with self._lock:
                self._current = 0.0
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
        self._inner = inner
        self._timer = timer

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Delegate and time."""
        began = time.perf_counter()
        try:
            return self._inner.complete(request)
        finally:
            self._timer.add(time.perf_counter() - began)


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
            self._timer.add(time.perf_counter() - began)


def time_ports(runtime: Services) -> PortTimer:
    """Replace the runtime's provider and tools with timed wrappers."""
    timer = PortTimer()
    service = runtime.chat
    service.provider = TimedProvider(service.provider, timer)
    service.tools = {name: TimedTool(tool, timer) for name, tool in service.tools.items()}
    return timer
