"""The exposition of stored metric rows: buckets, sums, hostile label values, empty families."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from api.metrics import LogCollector, LogSnapshot, _forget_dead
from projections.metric_families import (
    FIRST_EVENT,
    LOG_FAMILIES,
    RUN_DURATION,
    TOOL_INVOCATIONS,
    bucket_part,
)
from projections.metric_reads import MetricSample
from projections.metrics import label_text

Served = dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]


def _served(samples: list[MetricSample], lags: dict[str, int] | None = None) -> Served:
    text = generate_latest(LogCollector(LogSnapshot(samples, lags or {}))).decode()
    return {
        family.name: {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
        for family in text_string_to_metric_families(text)
    }


HISTOGRAMS = [family for family in LOG_FAMILIES if family.kind == "histogram"]


@given(st.sampled_from(HISTOGRAMS), st.integers(-(10**12), 10**12))
def test_the_bucket_is_the_first_bound_not_below_the_value(family: Any, value: int) -> None:
    first = next((str(bound) for bound in family.bounds if value <= bound), "+Inf")
    assert bucket_part(family, value) == first


def test_an_observation_on_a_bound_falls_in_that_bucket_and_beyond_the_last_in_inf() -> None:
    assert bucket_part(RUN_DURATION, 100) == "100"
    assert bucket_part(RUN_DURATION, 101) == "250"
    assert bucket_part(RUN_DURATION, 0) == "100"
    assert bucket_part(RUN_DURATION, 10**9) == "+Inf"


def test_buckets_are_served_cumulative_in_seconds_with_count_and_sum() -> None:
    labels = label_text({"release_outcome": "SUCCESS"})
    rows = [
        MetricSample(RUN_DURATION.name, "100", {"release_outcome": "SUCCESS"}, 2),
        MetricSample(RUN_DURATION.name, "1000", {"release_outcome": "SUCCESS"}, 3),
        MetricSample(RUN_DURATION.name, "+Inf", {"release_outcome": "SUCCESS"}, 1),
        MetricSample(RUN_DURATION.name, "sum", {"release_outcome": "SUCCESS"}, 400_500),
    ]
    assert labels == '{"release_outcome":"SUCCESS"}'
    got = _served(rows)[RUN_DURATION.name]
    bucket = RUN_DURATION.name + "_bucket"

    def at(le: str) -> float:
        return got[bucket, (("le", le), ("release_outcome", "SUCCESS"))]

    assert (at("0.1"), at("0.5"), at("1.0"), at("300.0"), at("+Inf")) == (2, 2, 5, 5, 6)
    assert got[RUN_DURATION.name + "_count", (("release_outcome", "SUCCESS"),)] == 6
    assert got[RUN_DURATION.name + "_sum", (("release_outcome", "SUCCESS"),)] == 400.5


def test_with_no_rows_every_family_is_served_and_unlabelled_ones_read_zero() -> None:
    got = _served([], {"metrics": 3})
    assert got["harness_runs_started"] == {("harness_runs_started_total", ()): 0}
    assert got[FIRST_EVENT.name][FIRST_EVENT.name + "_count", ()] == 0
    assert got[TOOL_INVOCATIONS.name] == {}
    assert got["harness_projection_lag"] == {
        ("harness_projection_lag", (("projection", "metrics"),)): 3
    }
    assert got["harness_runs_in_progress"] == {("harness_runs_in_progress", ()): 0}


def test_hostile_label_values_are_escaped_and_read_back_exactly() -> None:
    tool = 'evil"} harness_runs_total 1e9\n# TYPE x counter\\ünïcode'
    labels = {"tool": tool, "origin": "mcp:x", "status": "READY"}
    row = MetricSample(TOOL_INVOCATIONS.name, "total", labels, 7)
    got = _served([row])
    assert got[TOOL_INVOCATIONS.name] == {
        (
            "harness_tool_invocations_total",
            (("origin", "mcp:x"), ("status", "READY"), ("tool", tool)),
        ): 7
    }
    assert "x" not in got and got["harness_runs"] == {}


def test_the_open_streams_of_a_worker_that_died_are_forgotten(tmp_path: Path) -> None:
    """A replaced worker's live gauge file goes; a live one's and every counter file stay."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    files = [
        f"gauge_livesum_{dead.pid}.db",
        f"gauge_livesum_{os.getpid()}.db",
        f"counter_{dead.pid}.db",
    ]
    for name in files:
        (tmp_path / name).write_bytes(b"")
    _forget_dead(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files[1:])
