"""Runs as OpenTelemetry GenAI traces, received by a real OTLP/HTTP receiver the test starts.

The offline model diagnoses the sample data; its run's trace is exported through the SDK's
OTLP/HTTP exporter and decoded from the protobufs the receiver got: span names, attributes,
parent links and status against the GenAI conventions, identical bytes when exported twice,
terminations as status, and nothing a user typed or a tool returned in any span.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from bootstrap.composition import Overrides, Services, bootstrap
from domain.run import Run
from domain.states import BudgetKind, CancellationReason, FailureCode
from infrastructure.ops_data import sample_incidents
from infrastructure.otlp import otlp_exporter
from infrastructure.settings import Settings
from infrastructure.version import harness_version
from projections.otel_data import span_id, trace_id
from projections.otel_export import ExportFailedError, TraceExport
from tests.integration._otlp import Receiver, Span, free_port

INCIDENT = sample_incidents()[0]
VERSION = harness_version()


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Services]:
    with bootstrap(settings, create=True, sample=True, overrides=Overrides(heartbeat=False)) as s:
        yield s


def _export(services: Services, receiver: Receiver, run_id: UUID) -> list[Span]:
    export = TraceExport(services.store, otlp_exporter(receiver.url, timeout=5))
    before = len(receiver.spans)
    sent = export.export(run_id)
    export.exporter.shutdown()
    assert sent is not None and len(receiver.spans) == before + sent
    return receiver.spans[before:]


def _texts(spans: list[Span]) -> str:
    """Every string a span carries: names, attribute values, event attributes, status."""
    found: list[str] = []
    for span in spans:
        found += [span.name, span.description, *map(str, span.attributes.values())]
        for name, _, attributes in span.events:
            found += [name, *map(str, attributes.values())]
    return "\n".join(found)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"OTEL_SERVICE_NAME": "ops-harness"}, {"service.name": "ops-harness"}),
        (
            {"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=prod,service.namespace=sre"},
            {"deployment.environment.name": "prod", "service.namespace": "sre"},
        ),
        (  # OTEL_SERVICE_NAME wins over a service.name in the attributes, as the SDKs have it
            {"OTEL_SERVICE_NAME": "a", "OTEL_RESOURCE_ATTRIBUTES": "service.name=b,team=x%20y"},
            {"service.name": "a", "team": "x y"},
        ),
    ],
)
def test_the_resource_takes_the_standard_otel_variables(
    runtime: Services,
    monkeypatch: pytest.MonkeyPatch,
    environ: dict[str, str],
    expected: dict[str, str],
) -> None:
    result = runtime.chat.ask("session-otel", INCIDENT.question)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    with Receiver() as receiver:
        spans = _export(runtime, receiver, result.run_id)
    ours = {"service.name": "diagnosis-harness", "service.version": VERSION}
    assert spans and all(span.resource == ours | expected for span in spans)


def test_a_diagnosis_run_is_a_genai_trace(runtime: Services) -> None:
    result = runtime.chat.ask("session-otel", INCIDENT.question)
    with Receiver() as receiver:
        spans = _export(runtime, receiver, result.run_id)

    root, *children = spans
    run_id = result.run_id
    assert root.trace_id == f"{trace_id(run_id):032x}"
    assert root.span_id == f"{span_id(run_id, run_id, 1):016x}" and root.parent == ""
    assert root.name == "invoke_agent diagnosis-harness" and root.status == 1  # OK
    assert root.resource == {"service.name": "diagnosis-harness", "service.version": VERSION}
    assert {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "diagnosis-harness",
        "gen_ai.conversation.id": "session-otel",
        "harness.intent": "DIAGNOSIS",
        "harness.termination.state": "SUCCESS",
        "harness.termination.reason": "COMPLETED",
        "harness.release.outcome": "SUCCESS",
        "harness.run.finished": True,
    }.items() <= root.attributes.items()
    assert all(s.trace_id == root.trace_id and s.parent == root.span_id for s in children)
    assert len({s.span_id for s in spans}) == len(spans) and "0" * 16 not in {
        s.span_id for s in spans
    }

    chats = [s for s in children if s.attributes.get("gen_ai.operation.name") == "chat"]
    run = runtime.store.get_run(run_id)
    assert len(chats) == run.usage.model_calls
    assert (root.kind, root.attributes["gen_ai.provider.name"]) == (1, "offline")  # INTERNAL
    assert root.attributes["gen_ai.request.model"] == "offline-rules"
    for chat in chats:
        assert chat.name == "chat offline-rules" and chat.start <= chat.end
        assert chat.kind == 1  # INTERNAL: the offline model answers in process
        assert chat.attributes["gen_ai.provider.name"] == "offline"
        assert chat.attributes["gen_ai.request.model"] == "offline-rules"
        assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert chat.attributes["harness.model_step.purpose"] in {"ROUTE", "AGENT", "JUDGE"}
    tokens = sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats)
    tokens += sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats)
    assert tokens == run.usage.tokens
    assert (
        root.attributes["gen_ai.usage.input_tokens"] + root.attributes["gen_ai.usage.output_tokens"]
        == tokens
    )

    tools = [s for s in children if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert len(tools) == run.usage.tool_calls
    cited = set(result.content["references"]) if result.content else set()
    assert cited and cited <= {t.attributes["harness.tool.invocation.id"] for t in tools}
    for tool in tools:
        invocation = runtime.store.get_invocation(
            UUID(tool.attributes["harness.tool.invocation.id"])
        )
        assert tool.attributes["gen_ai.tool.call.id"].startswith("offline_")  # the model's id
        assert tool.name == f"execute_tool {invocation.tool}"
        assert tool.attributes["gen_ai.tool.name"] == invocation.tool
        assert tool.attributes["gen_ai.tool.type"] == "function" and tool.status == 0
        assert root.start <= tool.start <= tool.end <= root.end

    (release,) = [s for s in children if s.name == "harness.release"]
    verdicts = {
        e[2]["gen_ai.evaluation.name"]: e[2]["gen_ai.evaluation.score.label"]
        for e in release.events
        if e[0] == "gen_ai.evaluation.result"
    }
    assert verdicts["harness.evidence_guard"] == "valid"
    assert verdicts["harness.semantic_guard"] == "SUPPORTED"
    assert release.attributes["harness.release.outcome"] == "SUCCESS"

    texts = _texts(spans)
    assert INCIDENT.question not in texts  # no prompt
    for tool in tools:  # no tool output
        content = runtime.store.get_invocation(
            UUID(tool.attributes["harness.tool.invocation.id"])
        ).content
        assert all(line not in texts for line in content.splitlines() if len(line) > 20)


def test_exporting_twice_sends_identical_spans(runtime: Services) -> None:
    result = runtime.chat.ask("s", INCIDENT.question)
    with Receiver() as receiver:
        first = _export(runtime, receiver, result.run_id)
        second = _export(runtime, receiver, result.run_id)

    assert [s.raw for s in first] == [s.raw for s in second]
    assert len(first) > 3


def _ended(end: Any) -> Run:
    deadline = datetime.now(UTC) + timedelta(minutes=5)
    run = Run.start("s", "why is checkout slow?", deadline)
    run.attempt_routing()
    end(run)
    run.finish(datetime.now(UTC))
    return run


@pytest.mark.parametrize(
    ("end", "state", "reason"),
    [
        (
            lambda r: r.fail(FailureCode.MODEL_FAILED, "ModelUnavailableError: 503"),
            "FAILED",
            "MODEL_FAILED",
        ),
        (lambda r: r.cancel(CancellationReason.USER_REQUESTED), "CANCELLED", "USER_REQUESTED"),
        (lambda r: r.time_out(), "TIMED_OUT", "DEADLINE_EXCEEDED"),
        (lambda r: r.exhaust_budget(BudgetKind.TOKENS), "BUDGET_EXHAUSTED", "BUDGET_EXHAUSTED"),
    ],
)
def test_a_run_that_did_not_succeed_is_an_error_span_naming_its_termination(
    sqlite_settings: Settings, end: Any, state: str, reason: str
) -> None:
    with bootstrap(sqlite_settings, create=True, overrides=Overrides(heartbeat=False)) as services:
        run = _ended(end)
        services.store.save(run)
        with Receiver() as receiver:
            (root,) = _export(services, receiver, run.id)

    assert root.status == 2 and root.description == f"{state}: {reason}"
    assert root.attributes["harness.termination.state"] == state
    assert root.attributes["harness.termination.reason"] == reason
    assert root.attributes["error.type"] == reason
    assert root.attributes["harness.release.outcome"] in {"FAILED", "CANCELLED"}
    assert "why is checkout slow?" not in _texts([root])


def test_a_receiver_that_refuses_fails_the_export_and_it_can_be_repeated(
    sqlite_settings: Settings,
) -> None:
    with bootstrap(sqlite_settings, create=True, overrides=Overrides(heartbeat=False)) as services:
        run = _ended(lambda r: r.fail(FailureCode.INTERNAL_ERROR))
        services.store.save(run)
        with Receiver(status=400) as receiver:
            export = TraceExport(services.store, otlp_exporter(receiver.url, timeout=2))
            with pytest.raises(ExportFailedError, match=str(run.id)):
                export.export(run.id)
            assert receiver.requests == 1 and receiver.spans == []
            receiver.status = 200
            assert export.export(run.id) == 1


def test_an_unfinished_run_exports_what_it_has_so_far(sqlite_settings: Settings) -> None:
    with bootstrap(sqlite_settings, create=True, overrides=Overrides(heartbeat=False)) as services:
        run = Run.start("s", "q", datetime.now(UTC) + timedelta(minutes=5))
        services.store.save(run)
        export = TraceExport(services.store, otlp_exporter(f"http://127.0.0.1:{free_port()}/"))
        assert export.export(run.id, unfinished=False) is None  # nothing sent: not even tried
        with Receiver() as receiver:
            (root,) = _export(services, receiver, run.id)
    assert root.status == 0 and root.attributes["harness.run.finished"] is False


@pytest.mark.parametrize("setting", ["", "false", "1", "TRUE", "true"])
def test_content_goes_in_spans_only_when_capture_is_opted_in(
    runtime: Services, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", setting)
    result = runtime.chat.ask("session-otel", INCIDENT.question)
    with Receiver() as receiver:
        root, *children = _export(runtime, receiver, result.run_id)
    tools = [s for s in children if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert tools, "the sample diagnosis calls tools"
    captured = setting.lower() == "true"  # the OpenTelemetry spelling of a true boolean
    content = ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "harness.tool.scope")
    if not captured:
        assert "gen_ai.input.messages" not in root.attributes
        assert not [key for tool in tools for key in content if key in tool.attributes]
        assert INCIDENT.question not in _texts([root, *children])
        return
    question = json.loads(str(root.attributes["gen_ai.input.messages"]))
    assert question == [{"role": "user", "parts": [{"type": "text", "content": INCIDENT.question}]}]
    for tool in tools:
        stored = runtime.store.get_invocation(UUID(tool.attributes["harness.tool.invocation.id"]))
        assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == stored.arguments
        assert tool.attributes["gen_ai.tool.call.result"] == stored.content
        assert tool.attributes["harness.tool.scope"] == stored.normalized_scope
