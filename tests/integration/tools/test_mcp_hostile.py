"""Hostile MCP servers, as real processes over real stdio: the harness keeps its promises.

A server that lies about read-only is refused at preflight and never called; one that crashes
mid-call, hangs or writes garbage ends that invocation FAILED with a reason, inside the run's
deadline, and is started again for the next run; one that answers 10 MB leaves bounded evidence.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from application.tool_admission import Refusal
from bootstrap.composition import Services
from domain.run import Run
from domain.tool_invocation import ToolInvocation
from domain.tool_states import ToolRejectionCode
from infrastructure.settings import ConfigurationError
from tests.helpers import ask_scripted, fresh_sqlite
from tests.integration.tools._mcp import (
    alive,
    calls,
    configured,
    hostile,
    one_call,
    pids,
    starts,
    write_config,
)

ARGS = {"service": "checkout"}


@pytest.fixture
def services() -> Iterator[Services]:
    with fresh_sqlite() as opened:
        yield opened


def _events(services: Services) -> list[Any]:
    store = services.store
    return [
        store.mapper.to_domain_event(n)
        for n in store.recorder.select_notifications(start=1, limit=10_000)
    ]


def _of(events: list[Any], cls: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def _liar(tmp_path: Path, **tools: dict[str, Any]) -> Path:
    return write_config(tmp_path / "tools.toml", {"liar": hostile(tmp_path, "liar", tools=tools)})


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("no_annotations", "the server gives no readOnlyHint"),
        ("says_write", "the server says readOnlyHint: false"),
        ("contradicts", "the server says destructiveHint: true"),
    ],
)
def test_a_tool_that_is_not_read_only_is_refused_recorded_and_never_called(
    services: Services, tmp_path: Path, tool: str, why: str
) -> None:
    with configured(services, _liar(tmp_path)) as sources:
        assert not sources.tools[tool].read_only
        ask_scripted(services, one_call(tool, ARGS), tools=sources.tools)
    events = _events(services)
    (rejected,) = _of(events, Run.ToolRequestRejected)
    assert (rejected.tool, rejected.code) == (tool, ToolRejectionCode.NOT_READ_ONLY)
    assert rejected.detail == (
        f"{tool} is not read-only ({why}); to admit it anyway set allow_not_read_only = true"
        f" in [servers.liar.tools.{tool}] of HARNESS_TOOLS_CONFIG"
    )
    assert not _of(events, ToolInvocation.ToolInvocationStarted)
    assert calls(tmp_path) == []  # the server never saw the call


def test_an_explicit_override_admits_the_tool_and_every_invocation_records_it(
    services: Services, tmp_path: Path
) -> None:
    config = _liar(tmp_path, says_write={"allow_not_read_only": True})
    with configured(services, config) as sources:
        ask_scripted(services, one_call("says_write", ARGS), tools=sources.tools)
    (started,) = _of(_events(services), ToolInvocation.ToolInvocationStarted)
    assert (started.tool, started.origin, started.read_only_override) == (
        "says_write",
        "mcp:liar",
        True,
    )
    assert calls(tmp_path) == ["1 says_write"]


def test_a_tool_that_stops_saying_read_only_after_a_restart_is_not_called(
    services: Services, tmp_path: Path
) -> None:
    with configured(services, _liar(tmp_path)) as sources:
        assert sources.tools["flips"].read_only  # as first listed
        ask_scripted(services, one_call("crash_to_restart", ARGS), tools=sources.tools)
        ask_scripted(services, one_call("flips", ARGS), tools=sources.tools)
        assert starts(tmp_path) == 2 and not sources.tools["flips"].read_only
    failed = _of(_events(services), ToolInvocation.ToolInvocationFailed)
    assert [f.error_code for f in failed] == ["EXECUTION", "NOT_READ_ONLY"]
    assert calls(tmp_path) == ["1 crash_to_restart"]  # "flips" was never called


def test_a_server_that_crashes_mid_call_fails_the_call_and_serves_the_next_run(
    services: Services, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "tools.toml", {"c": hostile(tmp_path, "crash")})
    with configured(services, config) as sources:
        first = ask_scripted(services, one_call("crash", ARGS), tools=sources.tools)
        second = ask_scripted(services, one_call("crash", ARGS), tools=sources.tools)
    assert first.termination.state.value == second.termination.state.value
    events = _events(services)
    (failed,) = _of(events, ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "EXECUTION"
    assert "'c'" in failed.message and "restarted" in failed.message
    (ready,) = _of(events, ToolInvocation.ToolInvocationReady)
    assert ready.content.endswith("answered by start 2")
    assert calls(tmp_path) == ["1 crash", "2 crash"]


@pytest.mark.parametrize(
    ("mode", "code", "reason"),
    [("hang", "TIMEOUT", "did not answer"), ("garbage", "MALFORMED", "not MCP")],
)
def test_a_server_that_hangs_or_writes_garbage_fails_the_call_and_is_restarted(
    services: Services, tmp_path: Path, mode: str, code: str, reason: str
) -> None:
    # garbage is noticed when it arrives, not at the call timeout (30 s, past the test's patience)
    server = hostile(tmp_path, mode, call_timeout=1.5 if mode == "hang" else 30)
    config = write_config(tmp_path / "tools.toml", {"h": server})
    with configured(services, config) as sources:
        result = ask_scripted(services, one_call(mode, ARGS, deadline_s=20), tools=sources.tools)
        assert "TIMED_OUT" not in str(result.termination)  # the call failed, not the run
        (failed,) = _of(_events(services), ToolInvocation.ToolInvocationFailed)
        assert failed.error_code == code and reason in failed.message
        assert "'h'" in failed.message and "restarted" in failed.message
        sources.connections[0].start()  # the next use starts it again
        assert starts(tmp_path) == 2
        assert not alive(pids(tmp_path)[0])  # the broken one was stopped, not left behind
    assert not any(alive(pid) for pid in pids(tmp_path))  # closing ends every server


def test_a_hanging_server_is_bounded_by_the_run_deadline(
    services: Services, tmp_path: Path
) -> None:
    server = hostile(tmp_path, "hang", call_timeout=6)
    config = write_config(tmp_path / "tools.toml", {"h": server})
    with configured(services, config) as sources:  # the call timeout is not what ends it
        ask_scripted(services, one_call("hang", ARGS, deadline_s=1.5), tools=sources.tools)
    (failed,) = _of(_events(services), ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "TIMEOUT" and "deadline" in failed.message


@pytest.mark.parametrize("tool", ["big", "big_line"])
def test_ten_megabytes_leave_bounded_evidence(
    services: Services, tmp_path: Path, tool: str
) -> None:
    server = hostile(tmp_path, "big", max_message_bytes=16 * 1024 * 1024)  # read, then cut
    config = write_config(tmp_path / "tools.toml", {"b": server})
    with configured(services, config) as sources:
        ask_scripted(services, one_call(tool, ARGS), tools=sources.tools)
        limit = sources.tools[tool].max_result_bytes
    (ready,) = _of(_events(services), ToolInvocation.ToolInvocationReady)
    assert ready.byte_size <= limit
    assert any("not shown" in note or "cut" in note for note in ready.notes)
    assert "not shown" not in ready.content and "cut to" not in ready.content
    notifications = services.store.recorder.select_notifications(start=1, limit=10_000)
    assert max(len(n.state) for n in notifications) < 4 * limit  # every log row stays small


def test_a_configured_tool_the_server_does_not_offer_is_a_start_error(
    services: Services, tmp_path: Path
) -> None:
    server = hostile(tmp_path, "liar", expose=["no_annotations", "nope"])
    config = write_config(tmp_path / "tools.toml", {"liar": server})
    with pytest.raises(ConfigurationError, match=r"servers\.liar: .*no tool 'nope'"):
        with configured(services, config):
            pass


def test_a_name_offered_twice_is_refused_for_the_later_source(
    services: Services, tmp_path: Path
) -> None:
    server = hostile(tmp_path, "hang", expose=["big_line"])
    config = write_config(
        tmp_path / "tools.toml", {"one": server, "two": dict(server, env=dict(server["env"]))}
    )
    with configured(services, config) as sources:
        assert getattr(sources.tools["big_line"], "origin", None) == "mcp:one"
        views = [(v.origin, v.admission.refusal, v.admission.why) for v in sources.views()]
        remedy = sources.views()[1].admission.remedy
    assert views == [
        ("mcp:one", None, ""),
        ("mcp:two", Refusal.NAME_CLASH, "mcp:one already offers big_line"),
    ]
    assert remedy == "give mcp:two a prefix"


def test_arguments_the_schema_refuses_and_scopes_not_granted_never_reach_the_server(
    services: Services, tmp_path: Path
) -> None:
    server = hostile(tmp_path, "big", tools={"big_line": {"scope": "ops:write"}})
    config = write_config(tmp_path / "tools.toml", {"b": server})
    with configured(services, config) as sources:
        ask_scripted(services, one_call("big", {"service": 5}), tools=sources.tools)
        ask_scripted(services, one_call("big_line", ARGS), tools=sources.tools)
    rejected = _of(_events(services), Run.ToolRequestRejected)
    assert [(r.code, r.detail) for r in rejected] == [
        (ToolRejectionCode.INVALID_REQUEST, "service: 5 is not of type 'string'"),
        (ToolRejectionCode.AUTH, "scope ops:write not granted"),
    ]
    assert calls(tmp_path) == []


def test_a_tool_error_fails_the_invocation_with_the_servers_words_bounded(
    services: Services, tmp_path: Path
) -> None:
    server = hostile(tmp_path, "big", max_message_bytes=16 * 1024 * 1024)
    config = write_config(tmp_path / "tools.toml", {"b": server})
    with configured(services, config) as sources:
        ask_scripted(services, one_call("refuses", ARGS), tools=sources.tools)
        ask_scripted(services, one_call("big", ARGS), tools=sources.tools)
    (failed,) = _of(_events(services), ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "EXECUTION" and len(failed.message) <= 500
    assert failed.message.startswith("refuses failed: permission denied for checkout zzz")
    assert starts(tmp_path) == 1  # a tool's own error is no reason to restart its server
