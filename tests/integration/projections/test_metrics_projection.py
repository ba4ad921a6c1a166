"""The ``metrics`` projection: its rows say what plain SQL over the read tables says.

A mixed load (every SPEC §10 row: published, fallbacks, failed, cancelled, timed out; tool
failures and preflight rejections) is projected in small batches; the exposition built from the
stored rows must equal, series by series, what ``diagnosis_run`` and ``trace_event`` say, and a
rebuild from position 0 must give the same rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import generate_latest
from sqlalchemy import Engine

from api.metrics import LogCollector, LogSnapshot
from application.store import HarnessStore
from bootstrap.composition import Services
from infrastructure.settings import Settings
from projections.metric_reads import metric_samples
from projections.metrics import Metrics
from projections.runner import Projector
from tests.integration._cli import harness, store_env
from tests.integration._metrics_sql import expected, log_derived, parse
from tests.integration._projection_helpers import FLEET, dump, run_scenario

MIX = [
    *FLEET,
    "paths/reject_auth",
    "paths/reject_budget",
    "paths/reject_not_read_only",
    "paths/tool_raises",
    "paths/repair_succeeds",
]
"""Every SPEC §10 row, cancels, preflight rejections, a tool that raises, a repair."""


def run_mix(services: Services, after_each: Projector | None = None) -> None:
    """Every :data:`MIX` scenario in three sessions, catching ``after_each`` up after each."""
    for index, name in enumerate(MIX):
        run_scenario(services, name, f"session-{index % 3}")
        if after_each is not None:
            after_each.catch_up()


def scraped(engine: Engine) -> str:
    """The log-derived exposition from the stored rows (no lag: that is the API's part)."""
    with engine.connect() as connection:
        snapshot = LogSnapshot(metric_samples(connection), {})
    return generate_latest(LogCollector(snapshot)).decode()


@pytest.fixture
def mixed(services: Services, store: HarnessStore, engine: Engine) -> Projector:
    """The mixed load, projected in batches of 5 after every run."""
    follower = Projector(store, engine, batch_size=5)
    run_mix(services, follower)
    return follower


def test_every_series_equals_what_sql_over_the_read_tables_says(
    mixed: Projector, engine: Engine
) -> None:
    series = log_derived(parse(scraped(engine)))
    wanted = expected(engine)
    assert series == wanted
    names = {name for name, _ in series}
    for name in (  # the load reached every kind of series (the comparison is not vacuous)
        "harness_runs_total",
        "harness_tool_invocations_total",
        "harness_preflight_rejections_total",
        "harness_guard_verdicts_total",
        "harness_model_calls_total",
    ):
        assert name in names, name
    states = {dict(labels).get("termination_state") for name, labels in series}
    assert {"SUCCESS", "FAILED", "CANCELLED", "TIMED_OUT"} <= states, states
    statuses = {dict(labels).get("status") for name, labels in series}
    assert {"READY", "ERROR"} <= statuses


def test_a_rebuild_gives_the_same_rows_and_nothing_is_left_open(
    mixed: Projector, store: HarnessStore, engine: Engine
) -> None:
    followed = dump(engine)
    assert followed["metric_sample"]
    assert followed["metric_run"] == [] and followed["metric_invocation"] == []
    assert Projector(store, engine, batch_size=1000).rebuild(["metrics"]) > 0
    assert dump(engine) == followed
    assert Projector(store, engine, [Metrics()], batch_size=1).rebuild() > 0
    assert dump(engine) == followed


def test_the_rebuild_command_gives_the_same_rows(
    mixed: Projector, settings: Settings, engine: Engine, tmp_path: Path
) -> None:
    followed = dump(engine)
    env = store_env(settings)
    rebuilt = harness("projections", "rebuild", "metrics", env=env, cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "rebuilt metrics" in rebuilt.stdout
    assert dump(engine) == followed
