"""The tools configuration as an operator meets it: real ``harness`` processes, exit codes, lines.

A malformed file stops every command with exit 2 and one line naming the file and the field;
a server that cannot start stops ``harness serve`` and ``harness ask`` the same way. A plugin
is a real installed distribution (a ``*.dist-info`` found by importlib.metadata on PYTHONPATH):
its tools run with their origin recorded, and one that fails or returns garbage is named.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from bootstrap.composition import bootstrap
from domain.tool_invocation import ToolInvocation
from infrastructure.settings import Settings
from tests.api._serve import free_port
from tests.integration._cli import harness

PLUGIN = """
from application.ports import ToolOutput

class Uptime:
    name = "service_uptime"
    description = "Uptime of one service, in seconds."
    parameters = {"type": "object", "properties": {"service": {"type": "string"}}}
    read_only, required_scope, max_result_bytes, blocking = True, "ops:read", 4000, False

    def normalize_scope(self, arguments): return f"service={arguments['service']}"
    def run(self, arguments): return ToolOutput((f"{arguments['service']} up 86400 s",), "")

def tools(): return [Uptime()]
def garbage(): return [42]
def broken(): raise RuntimeError("cannot reach the uptime API")
"""


def _env(tmp_path: Path, config: Path, **more: str) -> dict[str, str]:
    return {
        "HARNESS_DATABASE_URL": f"sqlite:///{tmp_path / 'harness.db'}",
        "HARNESS_TOOLS_CONFIG": str(config),
        **more,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('builtin = "none"\n[servers.x]\ntransport = "stdio"\ncomand = "x"\n', "servers.x.comand"),
        ('builtins = "none"\n', "builtins: unknown field"),
        ("builtin = [\n", "not valid TOML"),
        ('[servers.x]\ntransport = "ftp"\n', "servers.x"),
    ],
)
@pytest.mark.parametrize("command", [["db", "status"], ["serve", "--port", "0"], ["ask", "why?"]])
def test_a_malformed_file_is_one_line_and_exit_2(
    tmp_path: Path, text: str, expected: str, command: list[str]
) -> None:
    config = tmp_path / "tools.toml"
    config.write_text(text)
    done = harness(*command, env=_env(tmp_path, config), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "HARNESS_TOOLS_CONFIG" in done.stderr and str(config) in done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["serve", "--port", "PORT"], ["ask", "why?"]])
def test_a_server_that_cannot_start_stops_the_command_with_exit_2(
    tmp_path: Path, command: list[str]
) -> None:
    config = tmp_path / "tools.toml"
    missing = tmp_path / "no-such-server"
    config.write_text(f'[servers.gone]\ntransport = "stdio"\ncommand = "{missing}"\n')
    args = [str(free_port()) if a == "PORT" else a for a in command]
    done = harness(*args, env=_env(tmp_path, config), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "servers.gone" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def _install_plugin(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    info = site / "uptime_tools-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: uptime-tools\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[harness.tools]\nuptime = uptime_tools:tools\n"
        "garbage = uptime_tools:garbage\nbroken = uptime_tools:broken\n"
    )
    (site / "uptime_tools.py").write_text(textwrap.dedent(PLUGIN))
    return site


def test_a_plugin_tool_runs_and_its_origin_is_recorded(tmp_path: Path) -> None:
    site = _install_plugin(tmp_path)
    config = tmp_path / "tools.toml"
    config.write_text('plugins = ["uptime"]\n')
    scenario = tmp_path / "uptime.yaml"
    scenario.write_text(
        "route: DIAGNOSIS\nsteps:\n"
        "  - {tool: service_uptime, arguments: {service: checkout}}\n"
        "  - {draft: {conclusion: null, facts: [], missing_info: []}}\n"
    )
    env = _env(tmp_path, config, HARNESS_MODEL=f"scripted:{scenario}")
    done = harness("ask", "why?", env=env | {"PYTHONPATH": str(site)}, cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    settings = Settings(database_url=env["HARNESS_DATABASE_URL"])
    with bootstrap(settings) as services:
        store = services.store
        events = [
            store.mapper.to_domain_event(n)
            for n in store.recorder.select_notifications(start=1, limit=10_000)
        ]
    started = [e for e in events if isinstance(e, ToolInvocation.ToolInvocationStarted)]
    assert [(e.tool, e.origin, e.read_only_override) for e in started] == [
        ("service_uptime", "plugin:uptime", False)
    ]
    ready = [e for e in events if isinstance(e, ToolInvocation.ToolInvocationReady)]
    assert [e.content for e in ready] == ["checkout up 86400 s"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("garbage", "plugin 'garbage' (uptime_tools:garbage) returned a int, not a Tool"),
        ("broken", "plugin 'broken' (uptime_tools:broken) failed: RuntimeError: cannot reach"),
        ("absent", "no entry point 'absent' in group harness.tools"),
    ],
)
def test_a_plugin_that_fails_or_returns_garbage_is_named(
    tmp_path: Path, name: str, expected: str
) -> None:
    site = _install_plugin(tmp_path)
    config = tmp_path / "tools.toml"
    config.write_text(f'plugins = ["{name}"]\n')
    env = _env(tmp_path, config) | {"PYTHONPATH": str(site)}
    done = harness("ask", "why?", env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr
    assert sys.executable


def test_the_service_diagnoses_over_the_shipped_mcp_server(tmp_path: Path) -> None:
    import os
    import sqlite3
    import subprocess
    import time
    import urllib.request

    from tests.integration._cli import HARNESS, ROOT
    from tests.integration.tools._mcp import HARNESS_BIN

    example = ROOT / "docs" / "examples" / "tools-sample-mcp.toml"
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    clean["PATH"] = f"{HARNESS_BIN.parent}{os.pathsep}{clean['PATH']}"
    clean["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [*HARNESS, "serve", "--port", str(port)],
        env=clean | _env(tmp_path, example),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:  # until it answers (the sample server is started twice: check, then worker)
            assert process.poll() is None and time.monotonic() < deadline, "serve did not start"
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=5).close()
                break
            except OSError:
                time.sleep(0.05)
        body = b'{"query": "Why was checkout slow on 2026-11-29?", "session_id": "mcp-1"}'
        request = urllib.request.Request(
            f"{base}/v1/chat", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            stream = response.read().decode()
        assert "event: done" in stream
        with sqlite3.connect(tmp_path / "harness.db") as db:
            deadline = time.monotonic() + 60
            query = "SELECT status, release_outcome FROM diagnosis_run WHERE session_id = 'mcp-1'"
            while not db.execute(query + " AND finished_at IS NOT NULL").fetchall():
                assert time.monotonic() < deadline, "the run was not projected"
                time.sleep(0.05)
            assert db.execute(query).fetchall() == [("SUCCESS", "SUCCESS")]
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "Traceback" not in stderr, stderr
