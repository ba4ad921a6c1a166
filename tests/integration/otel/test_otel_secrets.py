"""``harness otel export`` never prints the receiver's credentials, however they were given."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootstrap.composition import Overrides, bootstrap
from domain.redactor import MARK
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from tests.integration._cli import harness, store_env
from tests.integration._otlp import Receiver, free_port

PASSWORD = "otel-pw-5Kd8-never-print"
TOKEN = "otel-tok-Qm29-never-print"


@pytest.fixture
def run_id(sqlite_settings: Settings) -> str:
    """A store holding one finished diagnosis (the offline model)."""
    overrides = Overrides(heartbeat=False)
    with bootstrap(sqlite_settings, create=True, sample=True, overrides=overrides) as services:
        return str(services.chat.ask("s", sample_incidents()[0].question).run_id)


def _printed(settings: Settings, tmp_path: Path, *args: str, **otel: str) -> str:
    env = store_env(settings) | {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1"} | otel
    done = harness("otel", "export", *args, env=env, cwd=tmp_path)
    assert done.returncode in (1, 2), done.stdout + done.stderr
    printed = done.stdout + done.stderr
    assert "Traceback" not in printed and len(done.stderr.strip().splitlines()) == 1, printed
    return printed


def test_a_receiver_that_is_down_is_named_without_its_password_or_token(
    sqlite_settings: Settings, tmp_path: Path, run_id: str
) -> None:
    port = free_port()
    url = f"http://svc:{PASSWORD}@127.0.0.1:{port}/v1/traces?token={TOKEN}&tenant=a"
    given = _printed(sqlite_settings, tmp_path, run_id, "--endpoint", url)
    shown = f"http://127.0.0.1:{port}/v1/traces?token={MARK}&tenant={MARK}"
    assert shown in given and "export again" in given
    with Receiver(status=503) as receiver:
        base = f"http://svc:{PASSWORD}@127.0.0.1:{receiver.port}?token={TOKEN}"
        from_env = _printed(
            sqlite_settings, tmp_path, "--all", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=base
        )
    assert receiver.requests >= 1 and f"127.0.0.1:{receiver.port}" in from_env
    for printed in (given, from_env):
        assert PASSWORD not in printed and TOKEN not in printed, printed


@pytest.mark.parametrize(
    ("args", "otel"),
    [
        (["--all", "--endpoint", f"ftp://svc:{PASSWORD}@host/x?token={TOKEN}"], {}),
        (["--all"], {"OTEL_EXPORTER_OTLP_ENDPOINT": f"svc:{PASSWORD}@host:4318?token={TOKEN}"}),
    ],
)
def test_a_refused_endpoint_is_named_without_its_password_or_token(
    sqlite_settings: Settings, tmp_path: Path, args: list[str], otel: dict[str, str]
) -> None:
    printed = _printed(sqlite_settings, tmp_path, *args, **otel)
    assert "is not an http" in printed and f"token={MARK}" in printed
    assert PASSWORD not in printed and TOKEN not in printed, printed
