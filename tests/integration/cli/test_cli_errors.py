"""What a newcomer meets first: errors in one line, exit 2 for bad input, nothing created by a read.

Every case runs the real ``harness`` command in a process of its own, with ``COLUMNS`` set very
narrow and paths made very long: output that is not a terminal must never be wrapped.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from infrastructure.settings import Settings
from tests.api._serve import free_port, wait_until_up
from tests.conftest import PG_URL

HARNESS = [sys.executable, "-c", "from cli.main import app; app()"]
ROOT = Path(__file__).resolve().parents[3]
LONG = "a-deliberately-long-directory-name-" * 4


def _harness(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    clean["PYTHONPATH"] = str(ROOT) + os.pathsep + clean.get("PYTHONPATH", "")
    clean["COLUMNS"] = "20"  # a narrow terminal's setting must not wrap a pipe
    return subprocess.run(
        [*HARNESS, *args], env=clean | env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _one_line_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    """A working directory under a long path, as pytest's own can be on a CI machine."""
    path = tmp_path / LONG / LONG
    path.mkdir(parents=True)
    return path


def test_a_long_path_in_an_error_is_never_wrapped(deep: Path) -> None:
    url = f"sqlite:///{deep / 'store.db'}"
    line = _one_line_error(_harness("db", "status", env={"HARNESS_DATABASE_URL": url}, cwd=deep))
    assert f"no event store at SQLite file {deep / 'store.db'}:" in line
    assert "run `harness db init`" in line


@pytest.mark.parametrize(
    "command",
    [
        ("db", "status"),
        ("runs", "list"),
        ("runs", "show", "7c35daf4-a6a6-478a-93b9-d913aeba9809"),
        ("audit", "export", "--all"),
        ("projections", "status"),
    ],
)
def test_a_read_command_never_creates_a_store(deep: Path, command: tuple[str, ...]) -> None:
    line = _one_line_error(_harness(*command, env={}, cwd=deep))
    assert str(deep / "harness.db") in line  # the store is named, as an absolute path
    assert not (deep / "harness.db").exists()


@pytest.mark.parametrize(
    ("question", "says"),
    [
        ("", "the question is empty"),
        ("   \t", "the question is empty"),
        ("x" * 4001, "the question is 4001 characters; at most 4000"),
    ],
)
def test_ask_refuses_a_bad_question_before_anything_runs(
    deep: Path, question: str, says: str
) -> None:
    assert says in _one_line_error(_harness("ask", question, env={}, cwd=deep))
    assert not (deep / "harness.db").exists()


def test_ask_refuses_a_malformed_session(deep: Path) -> None:
    line = _one_line_error(_harness("ask", "hello", "--session", "a b", env={}, cwd=deep))
    assert "--session 'a b'" in line


def test_the_query_limit_is_the_configured_one(deep: Path) -> None:
    env = {"HARNESS_MAX_QUERY_CHARS": "10"}
    line = _one_line_error(_harness("ask", "why is checkout slow", env=env, cwd=deep))
    assert "20 characters; at most 10" in line


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        ("notjson", "HARNESS_API_KEYS: not valid JSON"),
        ('[{"key": "k" , "name": "ann", "role": "user"},]', "HARNESS_API_KEYS: not valid JSON"),
        (
            '[{"key": "abcde", "name": "ann", "role": "user"}]',
            "API key 1 (name ann) is 5 characters; keys need 16 or more",
        ),
        (
            '[{"key": "0123456789abcdef", "name": "ann", "role": "user"},'
            ' {"key": "0123456789abcdef", "name": "bob", "role": "admin"}]',
            "API key 2 (name bob) repeats the secret of API key 1",
        ),
        (
            '[{"key": "0123456789abcdef", "name": "ann", "role": "user"},'
            ' {"key": "fedcba9876543210", "name": "ann", "role": "admin"}]',
            "API key 2 (name ann) repeats the name of API key 1",
        ),
        (
            '[{"key": "0123456789abcdef", "name": "local", "role": "user"}]',
            "the name 'local' is reserved",
        ),
        (
            '[{"key": "0123456789abcdef", "name": "ann", "role": "boss"}]',
            "HARNESS_API_KEYS: API key 1: role:",
        ),
    ],
)
def test_bad_api_keys_are_named_in_one_line(deep: Path, keys: str, says: str) -> None:
    result = _harness("serve", env={"HARNESS_API_KEYS": keys}, cwd=deep)
    line = _one_line_error(result)
    assert line.startswith("error: invalid configuration: ") and says in line
    assert "0123456789abcdef" not in result.stderr  # a key is never echoed
    assert not (deep / "harness.db").exists()


def _pg_env(url: str) -> dict[str, str]:
    return {"HARNESS_DATABASE_URL": url, "HARNESS_DB_CONNECT_TIMEOUT": "30"}


@pytest.mark.usefixtures("pg_available")
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (PG_URL.rsplit("/", 1)[0] + "/no_such_database", 'database "no_such_database" does not'),
        (
            PG_URL.replace("postgres@", "no_such_role:pw@", 1),
            'role "no_such_role" does not exist',
        ),
        (f"postgresql://postgres:pw@127.0.0.1:{free_port()}/harness", "Connection refused"),
    ],
)
def test_postgres_refusals_give_the_servers_reason(deep: Path, url: str, reason: str) -> None:
    # with a 30 s connect timeout, a message that waited on the pool would say "after 30.00 sec"
    line = _one_line_error(_harness("db", "status", env=_pg_env(url), cwd=deep))
    assert reason in line and "sec" not in line and ":pw@" not in line


def test_serve_on_a_port_in_use_says_so_before_serving(deep: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _harness("serve", "--port", str(port), env={}, cwd=deep)
    line = _one_line_error(result)
    assert f"cannot serve on 127.0.0.1:{port}: it is already in use" in line
    assert "serving on" not in result.stdout + result.stderr


@pytest.mark.parametrize(("port", "says"), [("99999", "less than or equal to 65535"), ("-1", "0")])
def test_serve_on_a_port_no_machine_has_is_bad_input(deep: Path, port: str, says: str) -> None:
    # was: "unexpected OverflowError: bind(): port must be 0-65535", exit 1
    line = _one_line_error(_harness("serve", f"--port={port}", env={}, cwd=deep))
    assert "Invalid value for '--port'" in line and says in line
    assert not (deep / "harness.db").exists()


def test_serve_on_port_0_serves_on_a_free_port_and_says_which(deep: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    clean["PYTHONPATH"] = str(ROOT) + os.pathsep + clean.get("PYTHONPATH", "")
    serve = subprocess.Popen(
        [*HARNESS, "serve", "--port", "0"],
        env=clean,
        cwd=deep,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stderr is not None
        said = serve.stderr.readline()  # printed before the service starts
        assert said.startswith("serving on http://127.0.0.1:"), said
        base = said.split()[2]
        assert not base.endswith(":0") and not base.endswith(":8000"), base
        wait_until_up(base, serve, path="/healthz")
    finally:
        serve.send_signal(signal.SIGINT)
        serve.communicate(timeout=60)


@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_serve_refuses_a_metrics_directory_it_cannot_use(deep: Path, kind: str) -> None:
    place = deep / "metrics"
    if kind == "a file":
        place.write_text("not a directory")
    env = {"PROMETHEUS_MULTIPROC_DIR": str(place), "HARNESS_PORT": str(free_port())}
    result = _harness("serve", env=env, cwd=deep)
    line = _one_line_error(result)
    assert f"PROMETHEUS_MULTIPROC_DIR='{place}' is not a writable directory" in line
    assert "serving on" not in result.stdout + result.stderr


def test_an_unexpected_failure_is_one_line_and_debug_shows_the_traceback(
    pg_settings: Settings, deep: Path
) -> None:
    """A knowledge question on a store whose runbooks were never indexed."""
    env = {
        "HARNESS_DATABASE_URL": pg_settings.database_url,
        "HARNESS_DATABASE_SCHEMA": pg_settings.database_schema,
    }
    assert _harness("db", "init", env=env, cwd=deep).returncode == 0  # no --sample
    question = "How do I restart the checkout service?"
    result = _harness("ask", question, env=env, cwd=deep)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    failed = [line for line in result.stderr.splitlines() if "failed unexpectedly" in line]
    assert len(failed) == 1 and "KnowledgeStoreError" in failed[0]
    assert "run `harness db init --sample`" in failed[0]
    debug = _harness("--debug", "ask", question, env=env, cwd=deep)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr
