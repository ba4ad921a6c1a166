"""The span mapping is a pure function of a run's events: ids, times, status and redaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from domain.collection import Collection
from domain.run import Run
from domain.states import BudgetKind, Intent, ModelStepOutcome, ModelStepPurpose
from domain.tool_invocation import ToolInvocation
from domain.tool_states import EvidenceStatus, ToolErrorCode, ToolRejectionCode
from domain.values import Budget, McpSession, ModelCall
from projections.otel_data import RunStreams, SpanData, nanos, span_id, trace_id
from projections.otel_spans import run_spans

DEADLINE = datetime(2030, 1, 1, tzinfo=UTC)
RUN = UUID(int=7)
SECRET_QUERY = "why is checkout slow? my password is hunter2"


def _run() -> Run:
    run = Run.start("sess", SECRET_QUERY, DEADLINE, run_id=RUN, limits=Budget(20, 12, 9_000, 10**6))
    run.attempt_routing()
    run.decide_routing(Intent.DIAGNOSIS)
    return run


def _streams(run: Run, *invocations: ToolInvocation) -> RunStreams:
    collection = Collection.start(RUN)
    return RunStreams(
        run.collect_events(),
        {i.id: i.collect_events() for i in invocations},
        collection.collect_events(),
    )


def _by_name(spans: list[SpanData]) -> dict[str, SpanData]:
    return {span.name: span for span in spans}


def test_a_model_step_is_a_chat_span_that_began_its_latency_before_it_was_recorded() -> None:
    run = _run()
    run.record_model_step(
        ModelStepPurpose.AGENT,
        10,
        5,
        250,
        provider="openai-compatible",
        model="m-1",
        finish_reason="tool_calls",
    )
    run.record_model_step(
        ModelStepPurpose.JUDGE, 0, 0, 40, ModelStepOutcome.FAILED, "ModelTimeoutError: no answer"
    )
    streams = _streams(run)
    root, ok, failed = run_spans(streams)

    step = streams.run[-2]
    assert isinstance(step, Run.AgentModelStep)
    assert ok.name == "chat m-1" and ok.end == nanos(step.timestamp)
    assert ok.end - ok.start == 250 * 1_000_000
    assert ok.span == span_id(RUN, RUN, step.originator_version) and ok.parent == root.span
    assert ok.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert ok.attributes["gen_ai.provider.name"] == "openai" and ok.status == "UNSET"
    assert ok.kind == "CLIENT" and root.kind == "INTERNAL"  # a model over HTTP; the agent here
    assert failed.name == "chat" and "gen_ai.request.model" not in failed.attributes
    assert failed.attributes["gen_ai.provider.name"] == "unknown"  # a step recorded before v3
    assert failed.kind == "INTERNAL"  # not known to have left the process
    assert (failed.status, failed.description) == ("ERROR", "ModelTimeoutError: no answer")
    assert failed.attributes["error.type"] == "_OTHER"  # recorded without its class
    assert root.status == "UNSET" and root.attributes["harness.run.finished"] is False


def test_a_failed_tool_is_an_error_span_and_an_open_one_ends_at_its_begin() -> None:
    run = _run()
    failed = ToolInvocation.begin(RUN, "search_logs", "service=checkout", {"q": "hunter2"})
    failed.fail(ToolErrorCode.TIMEOUT, "the tool said hunter2")
    ready = ToolInvocation.begin(RUN, "list_alerts", "service=checkout", {})
    ready.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "ALERT hunter2 fired")
    still_open = ToolInvocation.begin(RUN, "query_metrics", "service=checkout", {})
    run.reject_tool_request("drop_tables", ToolRejectionCode.AUTH, "not read-only")
    spans = _by_name(run_spans(_streams(run, failed, ready, still_open)))

    bad = spans["execute_tool search_logs"]
    assert (bad.status, bad.description, bad.attributes["error.type"]) == ("ERROR", "TIMEOUT") + (
        "timeout",
    )
    assert bad.span == span_id(RUN, failed.id, 1) and bad.kind == "INTERNAL"
    assert "gen_ai.tool.call.id" not in bad.attributes  # no model call id was recorded
    assert bad.attributes["harness.tool.invocation.id"] == str(failed.id)
    good = spans["execute_tool list_alerts"]
    assert good.status == "UNSET" and good.attributes["harness.tool.evidence_status"] == (
        "EVIDENCE_FOUND"
    )
    assert spans["execute_tool query_metrics"].start == spans["execute_tool query_metrics"].end
    root = spans["invoke_agent diagnosis-harness"]
    (rejected,) = root.events
    assert rejected.name == "harness.tool.rejected"
    assert rejected.attributes == {
        "gen_ai.tool.name": "drop_tables",
        "harness.rejection.code": "AUTH",
    }
    assert "hunter2" not in repr(list(spans.values()))  # no query, argument, output or message


def test_a_remote_model_step_names_its_server_and_the_response_it_got() -> None:
    run = _run()
    wire = ModelCall("api.example.com", 443, "chatcmpl-9", "m-1-0613", "fp_1", "default", "json")
    run.record_model_step(
        ModelStepPurpose.AGENT, 3, 4, 9, provider="openai-compatible", model="m-1", call=wire
    )
    failure = ModelCall("api.example.com", 443, error_type="429")
    run.record_model_step(
        ModelStepPurpose.JUDGE,
        0,
        0,
        5,
        ModelStepOutcome.FAILED,
        "HTTP 429",
        provider="openai-compatible",
        model="m-1",
        call=failure,
    )
    _, ok, failed = run_spans(_streams(run))

    assert {k: v for k, v in ok.attributes.items() if not k.startswith("harness.")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "m-1",
        "gen_ai.conversation.id": "sess",
        "gen_ai.usage.input_tokens": 3,
        "gen_ai.usage.output_tokens": 4,
        "gen_ai.output.type": "json",
        "server.address": "api.example.com",
        "server.port": 443,
        "gen_ai.response.id": "chatcmpl-9",
        "gen_ai.response.model": "m-1-0613",
        "openai.api.type": "chat_completions",
        "openai.response.system_fingerprint": "fp_1",
        "openai.response.service_tier": "default",
    }
    assert failed.attributes["error.type"] == "429" and failed.status == "ERROR"
    assert "gen_ai.response.id" not in failed.attributes


def test_a_tool_call_carries_the_models_call_id_and_an_mcp_one_is_an_mcp_client_span() -> None:
    run = _run()
    builtin = ToolInvocation.begin(RUN, "search_logs", "s", {}, call_id="call_abc")
    builtin.mark_ready(EvidenceStatus.NO_EVIDENCE, "")
    http = McpSession("ops", "http", "mcp.example.com", 8443, "2025-06-18", "sess-1")
    remote = ToolInvocation.begin(
        RUN, "ops_uptime", "{}", {}, origin="mcp:ops", call_id="call_def", mcp=http
    )
    remote.fail("EXECUTION", "ops_uptime failed", error_type="tool_error")  # isError: true
    local = McpSession("time", "stdio", protocol_version="2025-06-18")
    piped = ToolInvocation.begin(RUN, "now", "{}", {}, origin="mcp:time", mcp=local)
    piped.fail("EXECUTION", "MCP server 'time' answered: Invalid params", error_type="-32602")
    spans = _by_name(run_spans(_streams(run, builtin, remote, piped)))

    own = spans["execute_tool search_logs"]
    assert own.attributes["gen_ai.tool.call.id"] == "call_abc" and own.kind == "INTERNAL"
    assert not [k for k in own.attributes if k.startswith(("mcp.", "network.", "server."))]
    over_http = spans["tools/call ops_uptime"]
    assert over_http.kind == "CLIENT" and over_http.status == "ERROR"
    assert {k: v for k, v in over_http.attributes.items() if not k.startswith("harness.")} == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "ops_uptime",
        "gen_ai.tool.type": "extension",
        "gen_ai.tool.call.id": "call_def",
        "gen_ai.agent.name": "diagnosis-harness",
        "gen_ai.conversation.id": "sess",
        "mcp.method.name": "tools/call",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "server.address": "mcp.example.com",
        "server.port": 8443,
        "mcp.protocol.version": "2025-06-18",
        "mcp.session.id": "sess-1",
        "error.type": "tool_error",
    }
    over_pipe = spans["tools/call now"]
    assert over_pipe.attributes["error.type"] == "-32602"  # the JSON-RPC error code
    assert over_pipe.attributes["rpc.response.status_code"] == "-32602"
    assert over_pipe.attributes["network.transport"] == "pipe"
    assert "server.address" not in over_pipe.attributes
    assert over_pipe.attributes["harness.mcp.server"] == "time"


def test_budget_exhaustion_is_an_error_root_with_an_event_naming_the_budget() -> None:
    run = _run()
    run.charge(BudgetKind.BYTES, 2_000_000)
    run.finish(DEADLINE)
    (root,) = run_spans(_streams(run))

    assert (root.status, root.description) == ("ERROR", "BUDGET_EXHAUSTED: BUDGET_EXHAUSTED")
    names = [event.name for event in root.events]
    assert names == ["harness.budget.exhausted", "harness.cancellation.requested"]
    assert root.events[0].attributes["harness.budget.kind"] == "BYTES"
    assert root.attributes["harness.release.outcome"] == "FAILED"


def test_the_same_events_give_the_same_spans() -> None:
    run = _run()
    run.record_model_step(ModelStepPurpose.ROUTE, 1, 1, 1)
    streams = _streams(run)
    assert run_spans(streams) == run_spans(streams)
    assert run_spans(streams)[0].trace == trace_id(RUN)


@given(st.uuids(), st.uuids(), st.one_of(st.integers(1, 10**9), st.text(max_size=20)))
def test_ids_are_never_zero_and_fit_their_widths(run: UUID, stream: UUID, key: int | str) -> None:
    assert 0 < trace_id(run) < 2**128
    assert 0 < span_id(run, stream, key) < 2**64


def test_times_are_exact_nanoseconds() -> None:
    at = datetime(2026, 12, 4, 12, 0, 0, 123456, tzinfo=UTC)
    assert nanos(at) == nanos(at - timedelta(microseconds=1)) + 1000
    assert nanos(at) % 1_000_000_000 == 123_456_000
