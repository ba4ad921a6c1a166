"""Real third-party MCP servers from PyPI, as real processes: admitted, refused, called, shown.

``mcp-server-time`` (two read-only tools) and ``mcp-server-git`` (read-only tools, and writes
such as ``git_reset`` and ``git_commit`` that say ``readOnlyHint: false``) are installed by the
dev extra and started once for the module, over a git repository made here, with the hostile
test server's unannotated tool beside them (refused, and admitted where configured so). A
scripted model diagnoses with them: it is offered only the admitted tools, its calls to the
read-only ones give evidence, and its call to ``git_reset`` is refused naming the setting that
would admit it, and never reaches the server (the repository is unchanged).
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from application.ports import ModelRequest, ModelResponse
from application.tool_admission import AdmittedBy, Refusal
from bootstrap.composition import Services
from domain.run import Run
from domain.states import ModelStepPurpose
from domain.tool_invocation import ToolInvocation
from domain.tool_states import ToolRejectionCode
from infrastructure.model_scripted import ScriptedProvider
from infrastructure.tool_catalog import summary_lines
from infrastructure.tool_sources import ToolSources, assemble_tools
from tests.helpers import ask_scripted, fresh_sqlite
from tests.integration._cli import harness
from tests.integration.tools._mcp import hostile, write_config

COMMIT = "checkout: raise the connection pool to 50"
READ_ONLY_GIT = {"git_status", "git_log", "git_diff", "git_show", "git_branch"}
WRITING_GIT = {"git_commit", "git_reset", "git_create_branch", "git_checkout"}


@dataclass(frozen=True)
class Ecosystem:
    """The servers' configuration, the repository they read, and the assembled tools."""

    config: Path
    repo: Path
    logs: Path
    services: Services
    sources: ToolSources


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com"}
    env |= {"GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.com", "HOME": str(repo)}
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def _repository(folder: Path) -> Path:
    repo = folder / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "pool.conf").write_text("max_connections = 50\n")
    _git(repo, "add", "pool.conf")
    _git(repo, "commit", "-q", "-m", COMMIT)
    return repo


def _servers(folder: Path, repo: Path) -> dict[str, dict[str, Any]]:
    python = sys.executable
    unannotated = {"expose": ["no_annotations"]}
    return {
        "time": {
            "transport": "stdio",
            "command": python,
            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        },
        "git": {
            "transport": "stdio",
            "command": python,
            "args": ["-m", "mcp_server_git", "--repository", str(repo), "-v"],
            "tools": {"git_add": {"allow_not_read_only": True}},
        },
        "plain": hostile(folder, "liar", **unannotated),
        "allowed": hostile(
            folder,
            "liar",
            prefix="ok_",
            tools={"no_annotations": {"allow_not_read_only": True}},
            **unannotated,
        ),
    }


@pytest.fixture(scope="module")
def ecosystem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ecosystem]:
    folder = tmp_path_factory.mktemp("ecosystem")
    repo = _repository(folder)
    config = write_config(folder / "tools.toml", _servers(folder, repo), builtin="all")
    with fresh_sqlite() as services:
        sources = assemble_tools(config, services.engine)
        try:
            yield Ecosystem(config, repo, folder / "logs", services, sources)
        finally:
            sources.close()


def _admissions(sources: ToolSources) -> dict[str, tuple[str, AdmittedBy | None, Refusal | None]]:
    return {v.name: (v.origin, v.admission.by, v.admission.refusal) for v in sources.views()}


def test_each_tool_is_admitted_or_refused_by_what_its_server_says(ecosystem: Ecosystem) -> None:
    found = _admissions(ecosystem.sources)
    read_only = (AdmittedBy.READ_ONLY, None)
    assert {name: found[name][1:] for name in ("get_current_time", "convert_time")} == {
        "get_current_time": read_only,
        "convert_time": read_only,
    }
    assert {name: found[name] for name in READ_ONLY_GIT} == dict.fromkeys(
        READ_ONLY_GIT, ("mcp:git", *read_only)
    )
    assert {name: found[name] for name in WRITING_GIT} == dict.fromkeys(
        WRITING_GIT, ("mcp:git", None, Refusal.READ_ONLY_HINT_FALSE)
    )
    assert found["git_add"] == ("mcp:git", AdmittedBy.ALLOW_NOT_READ_ONLY, None)
    assert found["no_annotations"] == ("mcp:plain", None, Refusal.NOT_ANNOTATED)
    assert found["ok_no_annotations"] == ("mcp:allowed", AdmittedBy.ALLOW_NOT_READ_ONLY, None)
    views = {view.name: view for view in ecosystem.sources.views()}
    reset = views["git_reset"]
    assert reset.annotations["readOnlyHint"] is False and reset.annotations["destructiveHint"]
    assert reset.admission.why == "the server says readOnlyHint: false, destructiveHint: true"
    assert "repo_path" in reset.input_schema["properties"]


def test_the_summary_is_one_line_per_source_naming_refusals_and_the_log(
    ecosystem: Ecosystem, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="infrastructure.tool_sources"):
        ecosystem.sources.announce()
    said = [r.getMessage() for r in caplog.records if r.name == "infrastructure.tool_sources"]
    assert said == summary_lines(ecosystem.sources.views(), ecosystem.sources.logs)
    by_source = {line.split(":", 2)[0] + ":" + line.split(":", 2)[1]: line for line in said}
    assert len(said) == len(by_source) == 5  # builtin, time, git, plain, allowed
    logs = ecosystem.logs
    assert said[0] == "tools from builtin: 4 admitted, 0 refused"
    assert (
        said[1]
        == f"tools from mcp:time: 2 admitted, 0 refused; its stderr goes to {logs}/mcp-time.log"
    )
    git = said[2]
    counted = re.match(
        r"tools from mcp:git: (\d+) admitted \(git_add by allow_not_read_only\), (\d+) refused \(",
        git,
    )
    assert counted, git
    assert int(counted.group(2)) >= len(WRITING_GIT)
    assert all(f"{name}: readOnlyHint false" in git for name in WRITING_GIT), git
    assert not any(name in git for name in READ_ONLY_GIT), git
    assert git.endswith(f"; its stderr goes to {logs}/mcp-git.log")
    assert said[3].startswith(
        "tools from mcp:plain: 0 admitted, 1 refused (no_annotations: not annotated)"
    )


def test_a_servers_stderr_goes_to_its_log_file(ecosystem: Ecosystem) -> None:
    log = (ecosystem.logs / "mcp-git.log").read_text()
    assert f"Using repository at {ecosystem.repo}" in log  # mcp-server-git -v says it on stderr


class Recording:
    """The scripted model, keeping every request it is sent (the tools offered with it)."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.blocking = inner.blocking
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.inner.complete(request)


def _scenario(repo: Path) -> dict[str, Any]:
    cited = {"reference": "$1", "excerpt": COMMIT}
    return {
        "route": "DIAGNOSIS",
        "deadline_s": 60,
        "steps": [
            {"tool": "git_log", "arguments": {"repo_path": str(repo), "max_count": 5}},
            {
                "progress": {
                    "gain": "GAINED",
                    "facts": [{"statement": "the pool was raised", "citations": [cited]}],
                },
                "tool": "get_current_time",
                "arguments": {"timezone": "UTC"},
            },
            {
                "progress": {"gain": "NO_GAIN"},
                "tool": "git_reset",
                "arguments": {"repo_path": str(repo)},
            },
            {
                "draft": {
                    "conclusion": {"statement": "The pool was raised to 50.", "citations": [cited]},
                    "facts": [],
                    "missing_info": [],
                }
            },
        ],
        "judge": "SUPPORTED",
    }


def _events(services: Services) -> list[Any]:
    store = services.store
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


def test_a_diagnosis_calls_the_read_only_tools_and_is_never_offered_the_refused_ones(
    ecosystem: Ecosystem,
) -> None:
    recorded: list[Recording] = []

    def wrap(provider: ScriptedProvider) -> Recording:
        recorded.append(Recording(provider))
        return recorded[0]

    head = _git(ecosystem.repo, "rev-parse", "HEAD")
    services, sources = ecosystem.services, ecosystem.sources
    before = len(_events(services))
    result = ask_scripted(services, _scenario(ecosystem.repo), tools=sources.tools, wrap=wrap)
    events = _events(services)[before:]
    agent = [r for r in recorded[0].requests if r.purpose is ModelStepPurpose.AGENT]
    admitted = {v.name for v in sources.views() if v.admission.admitted}
    assert agent and all({spec.name for spec in r.tools} == admitted for r in agent)
    assert "git_reset" not in admitted and "no_annotations" not in admitted
    ready = [e for e in events if isinstance(e, ToolInvocation.ToolInvocationReady)]
    assert len(ready) == 2 and COMMIT in ready[0].content and "UTC" in ready[1].content
    started = [e for e in events if isinstance(e, ToolInvocation.ToolInvocationStarted)]
    assert [(e.tool, e.origin) for e in started] == [
        ("git_log", "mcp:git"),
        ("get_current_time", "mcp:time"),
    ]
    (rejected,) = [e for e in events if isinstance(e, Run.ToolRequestRejected)]
    assert (rejected.tool, rejected.code) == ("git_reset", ToolRejectionCode.NOT_READ_ONLY)
    assert rejected.detail == (
        "git_reset is not read-only (the server says readOnlyHint: false, destructiveHint: true);"
        " to admit it anyway set allow_not_read_only = true in [servers.git.tools.git_reset]"
        " of HARNESS_TOOLS_CONFIG"
    )
    assert _git(ecosystem.repo, "rev-parse", "HEAD") == head  # never reached the server
    assert result.release_outcome.value == "SUCCESS", result


def test_harness_tools_list_shows_them_and_keeps_the_servers_stderr_off_the_terminal(
    ecosystem: Ecosystem, tmp_path: Path
) -> None:
    env = {
        "HARNESS_DATABASE_URL": f"sqlite:///{tmp_path / 'h.db'}",
        "HARNESS_TOOLS_CONFIG": str(ecosystem.config),
    }
    done = harness("tools", "list", "--json", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Using repository" not in done.stderr and "Traceback" not in done.stderr
    import json

    body = json.loads(done.stdout)
    tools = {tool["name"]: tool for tool in body["data"]}
    assert body["count"] == len(body["data"]) == len(ecosystem.sources.views())
    reset = tools["git_reset"]
    assert (reset["origin"], reset["admitted"], reset["refusal"]) == (
        "mcp:git",
        False,
        "readOnlyHint false",
    )
    assert (
        reset["remedy"]
        == "set allow_not_read_only = true in [servers.git.tools.git_reset] of HARNESS_TOOLS_CONFIG"
    )
    assert reset["annotations"]["destructiveHint"] is True
    status = tools["get_current_time"]
    assert (status["admitted"], status["admitted_by"], status["origin"]) == (
        True,
        "read-only",
        "mcp:time",
    )
    assert status["input_schema"]["properties"]["timezone"]["type"] == "string"
    assert tools["no_annotations"]["refusal"] == "not annotated"
    assert tools["git_add"]["admitted_by"] == "allow_not_read_only"
    table = harness("tools", "list", env=env, cwd=tmp_path)
    lines = table.stdout.splitlines()
    (row,) = [line for line in lines if " git_reset " in line]
    assert "refused (readOnlyHint false)" in row and "[servers.git.tools.git_reset]" in row
    assert "Using repository" not in table.stderr


def test_the_service_says_the_summary_once_and_shows_the_tools_at_v1_tools(
    ecosystem: Ecosystem, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from infrastructure.settings import Settings
    from tests.api._serve import served_client

    db = f"sqlite:///{tmp_path / 's.db'}"
    settings = Settings(database_url=db, tools_config=ecosystem.config)
    with caplog.at_level(logging.INFO, logger="infrastructure.tool_sources"):
        with served_client(settings) as served:
            response = served.client.get("/v1/tools")
    said = [r.getMessage() for r in caplog.records if r.name == "infrastructure.tool_sources"]
    assert said == summary_lines(ecosystem.sources.views(), ecosystem.sources.logs)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["count"] == len(body["data"]) == len(ecosystem.sources.views())
    shown = {t["name"]: (t["origin"], t["admitted_by"], t["refusal"]) for t in body["data"]}
    assert shown["git_log"] == ("mcp:git", "read-only", None)
    assert shown["git_reset"] == ("mcp:git", None, "readOnlyHint false")
    assert shown["no_annotations"] == ("mcp:plain", None, "not annotated")
    assert shown["ok_no_annotations"] == ("mcp:allowed", "allow_not_read_only", None)
    assert shown["search_logs"] == ("builtin", "read-only", None)
