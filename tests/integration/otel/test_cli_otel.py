"""``harness otel export`` as a real process, against a real OTLP/HTTP receiver."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from bootstrap.composition import Overrides, bootstrap
from domain.run import Run
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from projections.otel_data import trace_id
from tests.integration._cli import HARNESS, ROOT, harness, store_env
from tests.integration._otlp import Receiver, free_port


@pytest.fixture
def finished(sqlite_settings: Settings) -> Iterator[tuple[Settings, UUID]]:
    """A store holding one finished diagnosis run (the offline model) and one unfinished run."""
    overrides = Overrides(heartbeat=False)
    with bootstrap(sqlite_settings, create=True, sample=True, overrides=overrides) as services:
        run_id = services.chat.ask("s", sample_incidents()[0].question).run_id
        services.store.save(Run.start("s2", "q", datetime.now(UTC) + timedelta(minutes=5)))
    yield sqlite_settings, run_id


def _env(settings: Settings, **otel: str) -> dict[str, str]:
    return store_env(settings) | {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1"} | otel


def _one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_export_one_run_to_the_configured_endpoint(
    finished: tuple[Settings, UUID], tmp_path: Path
) -> None:
    settings, run_id = finished
    with Receiver() as receiver:
        env = _env(settings, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base)
        result = harness("otel", "export", str(run_id), env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        prefix = str(run_id)[:8]
        again = harness("otel", "export", prefix, "--endpoint", receiver.url, env=env, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
    count = len(receiver.spans) // 2
    assert result.stdout.strip() == f"exported run {run_id}: {count} spans"
    assert {s.trace_id for s in receiver.spans} == {f"{trace_id(run_id):032x}"}
    assert [s.raw for s in receiver.spans[:count]] == [s.raw for s in receiver.spans[count:]]


def test_export_all_skips_unfinished_runs_with_a_note(
    finished: tuple[Settings, UUID], tmp_path: Path
) -> None:
    settings, run_id = finished
    with Receiver() as receiver:
        result = harness(
            "otel", "export", "--all", "--endpoint", receiver.url, env=_env(settings), cwd=tmp_path
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"exported 1 runs: {len(receiver.spans)} spans"
    assert "skipped 1 unfinished runs" in result.stderr
    assert {s.trace_id for s in receiver.spans} == {f"{trace_id(run_id):032x}"}


def test_a_receiver_that_is_down_exits_1_in_one_line(
    finished: tuple[Settings, UUID], tmp_path: Path
) -> None:
    settings, run_id = finished
    url = f"http://127.0.0.1:{free_port()}/v1/traces"
    result = harness(
        "otel", "export", str(run_id), "--endpoint", url, env=_env(settings), cwd=tmp_path
    )
    assert result.returncode == 1
    assert url in _one_line_error(result.stderr) and "export again" in result.stderr
    with Receiver(status=503) as receiver:
        refused = harness(
            "otel",
            "export",
            "--all",
            env=_env(settings, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.url),
            cwd=tmp_path,
        )
    assert refused.returncode == 1 and receiver.requests >= 1
    assert receiver.url in _one_line_error(refused.stderr)


@pytest.mark.parametrize(
    ("args", "otel", "says"),
    [
        (["not-a-uuid"], {}, "'not-a-uuid' is not a run id"),
        ([str(uuid4())], {}, "no run"),
        ([], {}, "give one RUN_ID or --all"),
        (["--all", "x"], {}, "give one RUN_ID or --all"),
        (["--all", "--endpoint", "ftp://x"], {}, "--endpoint 'ftp://x' is not an http"),
        (
            ["--all"],
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
            "OTEL_EXPORTER_OTLP_ENDPOINT=",
        ),
    ],
)
def test_bad_input_exits_2_in_one_line(
    finished: tuple[Settings, UUID],
    tmp_path: Path,
    args: list[str],
    otel: dict[str, str],
    says: str,
) -> None:
    settings, _ = finished
    result = harness("otel", "export", *args, env=_env(settings, **otel), cwd=tmp_path)
    assert result.returncode == 2
    assert says in _one_line_error(result.stderr)


def test_a_receiver_that_never_answers_is_given_up_on_in_one_line(
    finished: tuple[Settings, UUID], tmp_path: Path
) -> None:
    settings, run_id = finished
    with socket.socket() as silent:  # accepts connections (the kernel does) and says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1/traces"
        result = harness(
            "otel", "export", str(run_id), "--endpoint", url, env=_env(settings), cwd=tmp_path
        )
    assert result.returncode == 1
    assert url in _one_line_error(result.stderr)


def test_the_projection_process_exports_live_when_an_endpoint_is_set(
    finished: tuple[Settings, UUID], tmp_path: Path
) -> None:
    settings, run_id = finished
    with Receiver() as receiver:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        otel = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url, "PYTHONPATH": str(ROOT)}
        env = clean | _env(settings, **otel)
        process = subprocess.Popen(
            [*HARNESS, "projections", "run"],
            env=env,
            cwd=tmp_path,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            receiver.wait_until(lambda r: any(s.parent == "" for s in r.spans))
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "(exporting traces)" in stderr
    assert {s.trace_id for s in receiver.spans} == {f"{trace_id(run_id):032x}"}
