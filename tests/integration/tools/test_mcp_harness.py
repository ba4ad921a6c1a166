"""``harness mcp serve``: other agents ask the harness over MCP, as real processes.

An MCP client (the SDK's) asks over stdio and gets what the run published, with its citations
and run id, progress as notifications; cancelling the call cancels the run (the log says
USER_REQUESTED). Over HTTP the API's keys and roles hold: a user sees only their runs, an
auditor starts none. Bad arguments are tool errors naming what was wrong.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, TextResourceContents

from application.explain import explain_run
from application.store import events_of
from application.tool_admission import AdmittedBy, Refusal
from bootstrap.composition import Services, bootstrap
from domain.run import Run
from domain.tool_invocation import ToolInvocation
from infrastructure.settings import Settings
from tests.helpers import ask_scripted, fresh_sqlite
from tests.integration.tools._harness_mcp import (
    HANGS,
    QUESTION,
    harness_env,
    http_client,
    http_harness,
    stdio_harness,
)
from tests.integration.tools._mcp import HARNESS_BIN, configured, write_config

KEYS = [
    {"key": "key-ann-0123456789abcdef", "name": "ann", "role": "user"},
    {"key": "key-bob-0123456789abcdef", "name": "bob", "role": "user"},
    {"key": "key-carl-0123456789abcdef", "name": "carl", "role": "auditor"},
]
ANN, BOB, CARL = (entry["key"] for entry in KEYS)
WAIT = 60.0
"""The longest a test waits for a condition (it normally holds within a second)."""


def text_of(result: CallToolResult) -> str:
    """The one text block of a tool result."""
    (block,) = result.content
    assert isinstance(block, TextContent), block
    return block.text


def events_of_log(services: Services) -> list[Any]:
    """Every event in the store's log, in order."""
    store = services.store
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


async def _diagnose(client: Client) -> tuple[Any, list[str]]:
    said: list[str] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        said.append(message or "")

    result = await client.call_tool("diagnose", {"query": QUESTION}, progress_callback=progress)
    return result, said


def test_a_client_asks_and_gets_the_published_diagnosis_with_citations_and_progress(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with stdio_harness(harness_env(tmp_path / "h.db")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            result, said = await _diagnose(client)
            run_id = result.structured_content["run_id"]
            listed = await client.call_tool("list_runs", {"limit": 5})
            explained = await client.call_tool("explain_run", {"run_id": run_id})
            resources = (await client.list_resources()).resources
            read = await client.read_resource(f"harness://runs/{run_id}")
            templates = (await client.list_resource_templates()).resource_templates
            info = client.server_info
        assert info is not None and info.name == "diagnosis-harness"
        assert set(tools) == {"ask", "diagnose", "list_runs", "explain_run"}
        hints = {name: tool.annotations for name, tool in tools.items()}
        assert hints["diagnose"] and hints["diagnose"].read_only_hint is False  # records a run
        assert hints["list_runs"] and hints["list_runs"].read_only_hint is True
        assert not result.is_error, result
        published = result.structured_content
        assert published["release_outcome"] == "SUCCESS"
        report = published["content"]
        assert report["kind"] == "diagnosis" and report["citations"]
        text = text_of(result)
        assert text.startswith(f"Diagnosis: {report['conclusion']}")
        for citation in report["citations"]:
            assert f"cites {citation['reference']}: {citation['excerpt']!r}" in text
        assert text.endswith(f"run {run_id} (session {published['session_id']})")
        assert said[0] == f"run {run_id} started"
        assert "DIAGNOSIS_RUNNING" in said and said[-2:] == ["published: SUCCESS", "done: SUCCESS"]
        assert listed.structured_content["runs"][0]["run_id"] == run_id
        assert explained.structured_content["run_id"] == run_id
        assert explained.structured_content["termination_state"] == "SUCCESS"
        assert [r.uri for r in resources] == [f"harness://runs/{run_id}"]
        (contents,) = read.contents
        assert (
            isinstance(contents, TextResourceContents) and contents.mime_type == "application/json"
        )
        row = json.loads(contents.text)
        assert row["published_result"] == report  # what the tool returned is what was published
        assert [t.uri_template for t in templates] == ["harness://runs/{run_id}"]

    anyio.run(scenario)


def test_cancelling_the_call_cancels_the_run_and_the_log_says_so(tmp_path: Path) -> None:
    database = tmp_path / "h.db"
    started: list[str] = []

    async def scenario() -> None:
        async with stdio_harness(harness_env(database, HARNESS_MODEL=HANGS)) as client:
            with anyio.CancelScope() as scope:

                async def progress(
                    progress: float, total: float | None, message: str | None
                ) -> None:
                    started.append(message or "")
                    if message == "DIAGNOSIS_RUNNING":  # the model hangs from here on
                        scope.cancel()

                await client.call_tool("ask", {"query": QUESTION}, progress_callback=progress)
            assert scope.cancel_called
            run_id = started[0].split()[1]
            with anyio.fail_after(WAIT):  # the run ends at its next boundary
                while True:
                    found = await client.call_tool("explain_run", {"run_id": run_id})
                    if found.structured_content["finished"]:
                        break
                    await anyio.sleep(0.05)

    anyio.run(scenario)
    run_id = UUID(started[0].split()[1])
    settings = Settings(database_url=f"sqlite:///{database}")
    with bootstrap(settings) as services:
        explained = explain_run(services.store, run_id)
        events = events_of(services.store, run_id)
    assert (explained.termination_state, explained.termination_reason) == (
        "CANCELLED",
        "USER_REQUESTED",
    )
    (asked,) = [e for e in events if isinstance(e, Run.CancellationRequested)]
    assert asked.reason.value == "USER_REQUESTED"


def test_bad_arguments_are_tool_errors_that_name_what_was_wrong(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("ask", {"query": "   "}),
        ("ask", {"query": "why?", "model": "gpt-5", "budget": {"max_tool_calls": 10**6}}),
        ("ask", {"query": "why?", "deadline_s": 10**9}),
        ("ask", {"query": "why?", "session_id": "no session of mine"}),
        ("ask", {"query": "x" * 100_000}),
        ("explain_run", {"run_id": "not-a-uuid"}),
        ("explain_run", {"run_id": "00000000-0000-4000-8000-000000000000"}),
        ("list_runs", {"limit": 0, "state": "SLEEPING"}),
        ("list_runs", {"cursor": "garbage"}),
        ("drop_tables", {}),
        ("diagnose", {"query": "why?", "budget": {"tool_calls": 10**6}}),
    ]

    async def scenario() -> list[str]:
        async with stdio_harness(harness_env(tmp_path / "h.db")) as client:
            said = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                assert result.is_error, (name, arguments, result)
                said.append(text_of(result))
            with pytest.raises(MCPError, match="no resource"):
                await client.read_resource("harness://runs/../etc/passwd")
            with pytest.raises(MCPError, match="no run 00000000"):
                await client.read_resource("harness://runs/00000000-0000-4000-8000-000000000000")
            listed = await client.call_tool("list_runs", {})
            assert listed.structured_content == {"runs": [], "next_cursor": None}
            return said

    said = anyio.run(scenario)
    assert said[0].startswith("invalid arguments: query: String should match pattern")
    assert "budget.max_tool_calls: Extra inputs are not permitted" in said[1]
    assert "model: Extra inputs are not permitted" in said[1]
    assert said[2].startswith("invalid arguments: deadline_s: Input should be at most")
    assert said[3].startswith("invalid arguments: session_id: String should match pattern")
    assert said[4].startswith("invalid arguments: query: Input should be at most")
    assert said[5].startswith("invalid arguments: run_id: Input should be a valid UUID")
    assert said[6] == "no run 00000000-0000-4000-8000-000000000000 exists"
    assert "limit: Input should be greater than or equal to 1" in said[7]
    assert "state: Input should be" in said[7]
    assert said[8] == "'garbage' is not a cursor this listing gave"
    assert said[9] == "no tool 'drop_tables'; known: ask, diagnose, explain_run, list_runs"
    assert said[10].startswith("invalid arguments: budget.tool_calls: Input should be at most")
    assert all("Traceback" not in text for text in said)


def test_over_http_the_apis_keys_and_roles_hold(tmp_path: Path) -> None:
    env = harness_env(tmp_path / "h.db", HARNESS_API_KEYS=json.dumps(KEYS))

    async def scenario(url: str) -> None:
        async with http_client(url, ANN) as ann:
            result, _ = await _diagnose(ann)
            assert not result.is_error, result
            run_id, session = (result.structured_content[k] for k in ("run_id", "session_id"))
            mine = await ann.call_tool("list_runs", {})
            assert [r["run_id"] for r in mine.structured_content["runs"]] == [run_id]
        async with http_client(url, BOB) as bob:
            theirs = await bob.call_tool("list_runs", {})
            assert theirs.structured_content["runs"] == []
            hidden = await bob.call_tool("explain_run", {"run_id": run_id})
            assert hidden.is_error and text_of(hidden) == f"no run {run_id} exists"
            assert (await bob.list_resources()).resources == []
            follow_up = await bob.call_tool("ask", {"query": "and now?", "session_id": session})
            assert follow_up.is_error and text_of(follow_up).startswith(
                f"no session {session!r} of yours exists"
            )
            with pytest.raises(MCPError, match=f"no run {run_id} exists"):
                await bob.read_resource(f"harness://runs/{run_id}")
        async with http_client(url, CARL) as carl:
            every = await carl.call_tool("list_runs", {})
            assert [r["run_id"] for r in every.structured_content["runs"]] == [run_id]
            refused = await carl.call_tool("ask", {"query": QUESTION})
            assert refused.is_error
            assert text_of(refused) == (
                "the auditor role may not start runs (allowed: user, admin)"
            )
            assert (await carl.call_tool("list_runs", {})).structured_content["runs"][0][
                "owner"
            ] == "ann"

    with http_harness(env) as url:
        anyio.run(scenario, url)
        keyless = httpx.post(url, json={}, headers={"Accept": "application/json"})
        assert keyless.status_code == 401 and keyless.headers["www-authenticate"] == "Bearer"
        assert all(entry["key"] not in keyless.text for entry in KEYS)


def test_a_second_harness_uses_it_as_a_tool_server_reading_but_never_asking(
    tmp_path: Path,
) -> None:
    first = tmp_path / "first.db"

    async def ask_first() -> str:
        async with stdio_harness(harness_env(first)) as client:
            result, _ = await _diagnose(client)
            return str(result.structured_content["run_id"])

    run_id = anyio.run(ask_first)
    server = {
        "transport": "stdio",
        "command": str(HARNESS_BIN),
        "args": ["mcp", "serve"],
        "env": {"HARNESS_DATABASE_URL": f"sqlite:///{first}"},
    }
    config = write_config(tmp_path / "tools.toml", {"harness": server})
    cited = {"reference": "$1", "excerpt": QUESTION}
    scenario = {
        "route": "DIAGNOSIS",
        "deadline_s": 60,
        "steps": [
            {"tool": "list_runs", "arguments": {"limit": 5}},
            {
                "progress": {
                    "gain": "GAINED",
                    "facts": [{"statement": "checkout was diagnosed", "citations": [cited]}],
                },
                "tool": "explain_run",
                "arguments": {"run_id": run_id},
            },
            {
                "draft": {
                    "conclusion": {"statement": "Checkout was diagnosed.", "citations": [cited]}
                }
            },
        ],
        "judge": "SUPPORTED",
    }
    with fresh_sqlite() as services, configured(services, config) as sources:
        found = {v.name: (v.origin, v.admission.by, v.admission.refusal) for v in sources.views()}
        result = ask_scripted(services, scenario, tools=sources.tools)
        events = events_of_log(services)
    read_only = ("mcp:harness", AdmittedBy.READ_ONLY, None)
    refused = ("mcp:harness", None, Refusal.READ_ONLY_HINT_FALSE)
    assert found == {
        "list_runs": read_only,
        "explain_run": read_only,
        "ask": refused,  # it records a run: a diagnosis never starts another's
        "diagnose": refused,
    }
    ready = [e for e in events if isinstance(e, ToolInvocation.ToolInvocationReady)]
    assert len(ready) == 2
    assert run_id in ready[0].content and QUESTION in ready[0].content
    assert "SUCCESS" in ready[1].content and "why did the agent stop" in ready[1].content
    assert result.release_outcome.value == "SUCCESS", result


def test_asks_beyond_the_workers_cap_are_refused_in_words_and_start_nothing(
    tmp_path: Path,
) -> None:
    env = harness_env(tmp_path / "h.db", HARNESS_MODEL=HANGS, HARNESS_MAX_CONCURRENT_RUNS="1")

    async def scenario() -> tuple[str, list[dict[str, Any]]]:
        async with stdio_harness(env) as client:
            running = anyio.Event()

            async def progress(progress: float, total: float | None, message: str | None) -> None:
                if message == "DIAGNOSIS_RUNNING":
                    running.set()

            async with anyio.create_task_group() as group:
                group.start_soon(
                    partial(
                        client.call_tool, "ask", {"query": QUESTION}, progress_callback=progress
                    )
                )
                with anyio.fail_after(WAIT):
                    await running.wait()
                refused = await client.call_tool("diagnose", {"query": QUESTION})
                group.cancel_scope.cancel()  # the first ask: cancelled, and its run with it
            listed = await client.call_tool("list_runs", {})
            assert refused.is_error
            return text_of(refused), listed.structured_content["runs"]

    said, runs = anyio.run(scenario)
    assert said == "this worker already executes its 1 concurrent runs; retry in 1s"
    assert len(runs) == 1  # the refused ask started no run
