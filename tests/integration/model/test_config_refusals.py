"""The model settings are refused when they are read: one line, exit 2, and nothing created first.

``HARNESS_MODEL`` must name a provider, and a ``scripted:PATH`` a scenario that can be played;
``HARNESS_OPENAI_BASE_URL`` must not carry ``user:password@`` (the HTTP client would send it as
Basic authorization in place of the model key). Each command runs as a real process in an empty
working directory, where the default store ``./harness.db`` would appear if anything opened it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from infrastructure.model_openai import OpenAICompatibleProvider
from infrastructure.settings import ConfigurationError, Settings
from tests.integration._cli import harness
from tests.integration.model.test_model_openai import ChatServer, server

__all__ = ["server"]  # the fake chat-completions server, shared with test_model_openai

PASSWORD = "pw-Q7v3-never-print-me"
USERINFO_URLS = [
    f"http://svc:{PASSWORD}@127.0.0.1:9/v1",
    f"https://{PASSWORD}@api.example.invalid/v1",
    f"https://:{PASSWORD}@api.example.invalid/v1?api-version=1",
    f"  http://svc:{PASSWORD}@[::1]:8000/v1",
]
STORE_FILES = ("harness.db", "harness.db-wal", "harness.db-shm")


def _refused(result_code: int, stderr: str, stdout: str) -> str:
    """The one error line of a refused command (exit 2, no traceback)."""
    assert result_code == 2, (result_code, stdout, stderr)
    assert "Traceback" not in stderr + stdout
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: invalid configuration: "), stderr
    return lines[0]


def _nothing_created(cwd: Path) -> None:
    assert [name for name in STORE_FILES if (cwd / name).exists()] == []


@pytest.mark.parametrize("url", USERINFO_URLS)
def test_a_base_url_with_a_credential_is_refused_without_echoing_it(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_OPENAI_BASE_URL", url)
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_environment()
    message = str(caught.value)
    assert message.startswith("HARNESS_OPENAI_BASE_URL: holds a user name or password")
    assert "HARNESS_OPENAI_API_KEY" in message
    assert PASSWORD not in message and "svc" not in message
    with pytest.raises(ValidationError):
        Settings(openai_base_url=url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "https://api.example.invalid/v1?api-version=2024-06-01&key=abc",
        "https://api.example.invalid/v1/@models",  # an @ in the path is no credential
    ],
)
def test_a_base_url_without_userinfo_is_taken(url: str) -> None:
    assert Settings(openai_base_url=url).openai_base_url == url


def test_the_provider_refuses_a_credential_in_its_url_even_past_the_settings(
    server: ChatServer,
) -> None:
    """Settings copied without their checks still never send the URL's password as Basic."""
    url = server.url.replace("http://", f"http://svc:{PASSWORD}@")
    settings = Settings().model_copy(update={"model": "openai", "openai_base_url": url})
    with pytest.raises(ValueError, match="HARNESS_OPENAI_API_KEY") as caught:
        OpenAICompatibleProvider.from_settings(settings)
    assert PASSWORD not in str(caught.value)
    with pytest.raises(ValueError, match="holds a user name or password"):
        OpenAICompatibleProvider(base_url=url, api_key="", model="m", timeout_s=10.0)
    assert server.requests == []


@pytest.mark.parametrize("command", [("serve", "--port", "0"), ("model", "check")])
def test_commands_refuse_a_credential_in_the_base_url(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    env = {"HARNESS_MODEL": "openai", "HARNESS_OPENAI_BASE_URL": USERINFO_URLS[0]}
    result = harness(*command, env=env, cwd=tmp_path)
    line = _refused(result.returncode, result.stderr, result.stdout)
    assert "HARNESS_OPENAI_BASE_URL: holds a user name or password" in line
    assert PASSWORD not in result.stderr + result.stdout
    _nothing_created(tmp_path)


@pytest.mark.parametrize(
    "command",
    [
        ("serve", "--port", "0"),
        ("ask", "why is checkout slow?"),
        ("model", "check"),
        ("db", "init"),
    ],
)
def test_an_unknown_model_is_refused_before_a_store_is_created(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    result = harness(*command, env={"HARNESS_MODEL": "nonsense"}, cwd=tmp_path)
    line = _refused(result.returncode, result.stderr, result.stdout)
    assert "HARNESS_MODEL: 'nonsense' is not a model provider: use offline" in line
    _nothing_created(tmp_path)


@pytest.mark.parametrize(
    "command", [("serve", "--port", "0"), ("ask", "why is checkout slow?"), ("model", "check")]
)
def test_a_missing_scenario_is_named_before_a_store_is_created(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-dir" / "missing.yaml"
    result = harness(*command, env={"HARNESS_MODEL": f"scripted:{missing}"}, cwd=tmp_path)
    line = _refused(result.returncode, result.stderr, result.stdout)
    assert f"HARNESS_MODEL: cannot read scenario {missing}: No such file or directory" in line
    assert "ScenarioError" not in line and "unexpected" not in line
    _nothing_created(tmp_path)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("steps: {not: a list}\n", "'steps' must be a list of mappings"),
        ("tools: [search_logs]\n", "'tools' must be a mapping"),
        ("budget: {tokens: lots}\n", "invalid literal for int()"),
        ("deadline_s: soon\n", "could not convert string to float"),
        ("- just\n- a list\n", "must be a mapping with route/steps/tools keys"),
        ("route: [unclosed\n", "is not valid yaml: while parsing a flow sequence in"),
        ("", "must be a mapping"),
    ],
)
def test_a_scenario_that_cannot_be_played_is_named_by_its_file(
    text: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = tmp_path / "broken.yaml"
    scenario.write_text(text, encoding="utf-8")
    monkeypatch.setenv("HARNESS_MODEL", f"scripted:{scenario}")
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_environment()
    message = str(caught.value)
    assert message.startswith("HARNESS_MODEL: ") and str(scenario) in message, message
    assert says in message and "\n" not in message, message


@pytest.mark.parametrize("value", ["", "scripted:", "scripted:  ", "OpenAI", "openai "])
def test_a_model_setting_that_names_no_provider_is_refused(value: str) -> None:
    with pytest.raises(ValidationError, match="HARNESS_MODEL|model"):
        Settings(model=value)


def test_a_scenario_is_checked_for_ask_as_it_plays(tmp_path: Path) -> None:
    """A scenario that is fine when read plays: the check refuses nothing it would play."""
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "conclusion_supported.yaml"
    asked = harness(
        "ask", "why is checkout slow?", env={"HARNESS_MODEL": f"scripted:{scenario}"}, cwd=tmp_path
    )
    assert asked.returncode == 0, asked.stderr
    assert "== SUCCESS ==" in asked.stdout.splitlines()
