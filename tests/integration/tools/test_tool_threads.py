"""Where a built-in tool is asked and run: its argument check inline, its query in a port thread.

On PostgreSQL a built-in tool's query can wait (a lock, the network), so it runs in a port
thread under the deadline's watchdog; its argument check only parses the arguments
(``checks_block = False``), so it is asked in the run's own thread, sparing a hand-off per call.
A tool that does not say so is asked in a port thread like its run (``test_hung_ports.py``).
"""

from __future__ import annotations

import threading
from typing import Any, cast

from application.ports import JSON, Tool, ToolOutput
from application.tool_port import checks_block
from bootstrap.composition import Services
from domain.states import RunState
from infrastructure.ops_data import sample_incidents


class Threads:
    """Wraps a tool's check and run to note the thread each is called in."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def normalize_scope(self, arguments: JSON) -> str:
        self.seen.append(("check", threading.current_thread().name))
        return str(self.inner.normalize_scope(arguments))

    def run(self, arguments: JSON) -> ToolOutput:
        self.seen.append(("run", threading.current_thread().name))
        result: ToolOutput = self.inner.run(arguments)
        return result


def test_a_builtin_tool_is_checked_in_the_runs_thread_and_run_in_a_port_thread(
    services: Services,
) -> None:
    tools = services.chat.tools
    watched = {name: Threads(tool) for name, tool in tools.items()}
    services.chat.tools = cast("dict[str, Tool]", watched)
    runner = threading.current_thread().name

    result = services.chat.ask("s", sample_incidents()[0].question)

    assert result.termination.state is RunState.SUCCESS
    seen = [entry for tool in watched.values() for entry in tool.seen]
    assert seen and {where for what, where in seen if what == "check"} == {runner}
    blocking = next(iter(tools.values())).blocking
    runs = {where for what, where in seen if what == "run"}
    if blocking:  # PostgreSQL
        assert runs and all(where.startswith("port tool ") for where in runs)
    else:  # an SQLite read never waits: run inline too
        assert runs == {runner}
    assert all(not checks_block(tool) for tool in watched.values())
