"""A tool that never returns cannot keep a run, or the worker's run slot, over real HTTP.

Whether the tool hangs checking its arguments (an MCP schema that fetches a URL that never
answers) or running, a cancel ends the run at once: its stream ends, ``RUN_FINISHED`` is
recorded, its ``diagnosis_run`` row leaves RUNNING, and with ``HARNESS_MAX_CONCURRENT_RUNS=1``
the next run is admitted instead of 429. The tool is released only when the test is over.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from infrastructure.scripted_tools import ScriptedTool
from infrastructure.settings import Settings
from tests.api._serve import Served, read_all, served_client
from tests.api.test_streams import QUESTION, check_feed

WAIT_S = 60.0
"""A bound on waiting for the tool to start hanging, never reached when it works."""
LINE = "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s"
HANGS = {"argument check": {"scope_hang": True, "lines": [LINE]}, "run": {"hang": True}}


def _scenario(tmp_path: Path, where: str) -> Path:
    """A diagnosis whose search_logs hangs ``where``; its deadline is far off."""
    scenario = {
        "route": "DIAGNOSIS",
        "deadline_s": 600,
        "tools": {"search_logs": HANGS[where]},
        "steps": [
            {"tool": "search_logs", "arguments": {"service": "checkout"}},
            {"draft": {"conclusion": None, "facts": [], "missing_info": [{"kind": "SYMPTOM"}]}},
        ],
    }
    path = tmp_path / "hangs.json"
    path.write_text(json.dumps(scenario))
    return path


@pytest.fixture(params=sorted(HANGS))
def one_slot(
    request: pytest.FixtureRequest, sqlite_settings: Settings, tmp_path: Path
) -> Iterator[Served]:
    """A worker of one run slot whose search_logs never returns until the test is over."""
    update = {"model": f"scripted:{_scenario(tmp_path, request.param)}", "max_concurrent_runs": 1}
    with served_client(sqlite_settings.model_copy(update=update)) as served:
        try:
            yield served
        finally:
            _tool(served).release()


def _tool(served: Served) -> ScriptedTool:
    tool = served.app.state.worker.dispatcher.service.tools["search_logs"]
    assert isinstance(tool, ScriptedTool)
    return tool


def _start(served: Served) -> str:
    started = served.client.post("/v1/runs", json={"query": QUESTION})
    assert started.status_code == 202, started.text
    run_id: str = started.json()["run_id"]
    return run_id


def _problem(served: Served, method: str, url: str, **kw: Any) -> str:
    answer = served.client.request(method, url, **kw)
    assert answer.status_code == 429, answer.text
    detail: str = answer.json()["detail"]
    return detail


def test_a_cancel_ends_a_run_whose_tool_never_returns_and_frees_its_slot(one_slot: Served) -> None:
    client, dispatcher = one_slot.client, one_slot.app.state.worker.dispatcher
    run_id = _start(one_slot)
    assert _tool(one_slot).hanging.wait(WAIT_S), "the tool never started hanging"
    execution = dispatcher.execution(UUID(run_id))
    assert execution is not None and not execution.done()
    assert "1 concurrent runs" in _problem(one_slot, "POST", "/v1/runs", json={"query": QUESTION})

    cancelled = client.post(f"/v1/runs/{run_id}/cancel").json()
    assert (cancelled["cancelled"], cancelled["termination_reason"]) == (True, "USER_REQUESTED")
    feed = read_all(client, "GET", f"/v1/runs/{run_id}/stream")
    check_feed(feed, "CANCELLED")  # the stream ended: no public done after a cancel
    execution.result(timeout=WAIT_S)  # the worker's thread returned: its slot is free
    row = client.get(f"/v1/runs/{run_id}").json()
    assert (row["status"], row["termination_reason"]) == ("CANCELLED", "USER_REQUESTED")
    trace = [e["event_type"] for e in client.get(f"/v1/runs/{run_id}/trace").json()["data"]]
    assert trace[-1] == "RUN_FINISHED" and trace.count("RUN_FINISHED") == 1
    assert _tool(one_slot).hanging.is_set()  # the tool still had not returned

    admitted = _start(one_slot)  # the slot was released: no 429
    assert client.post(f"/v1/runs/{admitted}/cancel").json()["cancelled"] is True
