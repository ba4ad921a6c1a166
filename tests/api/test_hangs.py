"""A model provider or a tool that never answers: the run's deadline ends it, over real HTTP.

The ChatService tests show this at the use-case level (``tests/integration/runs/test_runtime_paths``
and the outcome table); here the same scenarios run inside the real service behind uvicorn, so
what a client sees is checked too: the stream ends ``failure`` then ``done`` (FAILED), and the
run's row says TIMED_OUT because of DEADLINE_EXCEEDED. Nothing is cancelled by the test: the
harness stops waiting for the port at the deadline on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from infrastructure.settings import Settings
from tests.api._serve import Served, read_all, served_client
from tests.api.test_streams import QUESTION, check_feed

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
HANGING = {
    "model": SCENARIOS / "timed_out.yaml",  # routes DIAGNOSIS, then the agent's call never answers
    "tool": SCENARIOS / "paths" / "late_tool_answer.yaml",  # search_logs never answers
    "argument check": SCENARIOS / "paths" / "argument_check_hangs.yaml",  # never checks them
}
"""Every scenario gives the run a 0.5 s deadline."""


@contextmanager
def _service(settings: Settings) -> Iterator[Served]:
    """``served_client``, whose scripted ports are released after the test."""
    with served_client(settings) as served:
        try:
            yield served
        finally:
            for tool in served.app.state.worker.dispatcher.service.tools.values():
                getattr(tool, "release", lambda: None)()  # a hung scripted tool answers, late


@pytest.mark.parametrize("where", sorted(HANGING))
def test_a_hanging_port_is_ended_by_the_run_deadline_through_the_service(
    sqlite_settings: Settings, where: str
) -> None:
    settings = sqlite_settings.model_copy(update={"model": f"scripted:{HANGING[where]}"})
    with _service(settings) as served:
        client, app = served.client, served.app
        feed = read_all(client, "POST", "/v1/chat", json={"query": QUESTION})
        check_feed(feed, "FAILED")  # metadata, status*, failure, done — the stream ended
        assert feed[-1].event == "done"
        run_id = feed[0].data["run_id"]
        row = client.get(f"/v1/runs/{run_id}").json()
        assert (row["status"], row["termination_state"], row["termination_reason"]) == (
            "FAILED",
            "TIMED_OUT",
            "DEADLINE_EXCEEDED",
        )
        trace = [e["event_type"] for e in client.get(f"/v1/runs/{run_id}/trace").json()["data"]]
        assert trace.count("RUN_TERMINATED") == 1
        assert trace[-1] == "RUN_FINISHED"
        worker = app.state.worker
        service = worker.dispatcher.service
        hung = service.provider if where == "model" else service.tools["search_logs"]
        assert hung.hanging.is_set()  # the port really was still waiting when the run ended
        if where == "tool":
            assert "TOOL_INVOCATION_FAILED" in trace  # its invocation closed, not left open
        if where == "argument check":  # rejected before any invocation began
            assert "TOOL_REQUEST_REJECTED" in trace and "TOOL_INVOCATION_STARTED" not in trace
