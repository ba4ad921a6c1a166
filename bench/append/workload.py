"""The events the writers append: a typical run's, its stored bytes, and the bare padding."""

from __future__ import annotations

from contextlib import closing
from datetime import UTC, datetime, timedelta

from bench.append import EVENTS_PER_STREAM
from bench.common import place
from bench.floor import StoredSize, Widget
from bootstrap.composition import bootstrap
from domain.run import Run
from domain.states import ChatApplicationStatus, Intent, ModelStepPurpose
from domain.tool_states import ToolRejectionCode
from domain.values import Budget

GENEROUS = Budget(model_calls=10**9, tool_calls=10**9, tokens=10**12, bytes=10**12)
FAR_DEADLINE = datetime.now(UTC) + timedelta(days=3650)


def start_run() -> Run:
    """A run with generous limits and a far deadline (``RUN_STARTED`` pending)."""
    return Run.start("bench-session", "why is checkout-api returning 502?", FAR_DEADLINE, GENEROUS)


def run_step(run: Run, index: int) -> None:
    """Trigger the run's event number ``index`` (1-based after RUN_STARTED), like a real run."""
    if index == 1:
        run.change_status(ChatApplicationStatus.ROUTING)
    elif index == 2:
        run.attempt_routing()
    elif index == 3:
        run.record_model_step(ModelStepPurpose.ROUTE, tokens_in=900, tokens_out=40, latency_ms=350)
    elif index == 4:
        run.decide_routing(Intent.DIAGNOSIS)
    elif index == 5:
        run.change_status(ChatApplicationStatus.DIAGNOSIS_RUNNING)
    elif index % 3 == 0:
        run.record_model_step(
            ModelStepPurpose.AGENT, tokens_in=2400, tokens_out=300, latency_ms=1200
        )
    elif index % 3 == 1:
        run.reject_tool_request(
            "shell.exec", ToolRejectionCode.NOT_READ_ONLY, "the tool is not declared read-only"
        )
    else:
        run.change_status(ChatApplicationStatus.DIAGNOSIS_RUNNING)


def sample_run_payloads() -> list[tuple[str, bytes]]:
    """The (topic, state) the project stores for each event of one typical run.

    They are encoded by the mapper of a store opened through the composition root, on a
    SQLite file of its own that is removed afterwards; nothing is appended.
    """
    run = start_run()
    for index in range(1, EVENTS_PER_STREAM):
        run_step(run, index)
    with place("sqlite") as where, bootstrap(where.settings, create=True) as services:
        stored = [services.store.mapper.to_stored_event(e) for e in run.collect_events()]
    return [(s.topic, s.state) for s in stored]


def bare_padding(target_state_bytes: float) -> str:
    """A payload that makes a bare event's stored state about the project's mean size."""
    widget = Widget.start("")
    for _ in range(1, EVENTS_PER_STREAM):
        widget.happen("")
    with closing(StoredSize()) as size:
        sizes = [size(e) for e in widget.collect_events()]
    return "x" * max(0, round(target_state_bytes - sum(sizes) / len(sizes)))
