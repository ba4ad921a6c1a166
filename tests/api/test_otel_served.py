"""The service exports its runs' traces live when an OTLP endpoint is configured."""

from __future__ import annotations

from functools import partial
from uuid import UUID

import pytest

from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from projections.otel_data import trace_id
from tests.api._serve import served_client
from tests.integration._otlp import Receiver


def _whole(receiver: Receiver, trace: str) -> bool:
    spans = receiver.of_trace(trace)
    return any(s.parent == "" and s.attributes.get("harness.run.finished") for s in spans)


def test_a_run_the_service_executes_reaches_the_receiver(
    sqlite_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url)
        with served_client(sqlite_settings) as served:
            question = {"query": sample_incidents()[0].question, "session_id": "otel"}
            run_id = UUID(served.client.post("/v1/runs", json=question).json()["run_id"])
            receiver.wait_until(partial(_whole, trace=f"{trace_id(run_id):032x}"))
    root = next(s for s in receiver.spans if s.parent == "")
    assert root.attributes["gen_ai.conversation.id"] == "otel"
    assert root.attributes["harness.run.id"] == str(run_id)
