"""The benches run end to end, tiny, and end their report with JSON lines; no figure is checked.

Each runs as ``python -m bench.NAME`` in a process of its own, as the README documents, on a
fresh place of its own (a temporary SQLite directory, or a schema of ``harness_bench`` on the
local PostgreSQL server that it drops again).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = {
    "append": ["--events", "8"],
    "run": ["--runs", "5"],
    "projections": ["--runs", "2", "--repeat", "1", "--prefix", "5"],
    "metrics": ["--runs", "50", "--scrapes", "5"],
}
"""The smallest options of the benches that measure both backends."""


def _bench(name: str, *args: str) -> list[dict[str, Any]]:
    """Run ``python -m bench.NAME ARGS``; the JSON objects its report ends with."""
    run = [sys.executable, "-m", f"bench.{name}", *args]
    done = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("name", TINY)
def test_a_bench_reports_its_ratios_on_sqlite(name: str) -> None:
    lines = _bench(name, *TINY[name], "--backend", "sqlite")
    ratios = [line for line in lines if line["kind"] == "ratio"]
    assert ratios
    assert {line["backend"] for line in ratios} == {"sqlite"}


@pytest.mark.postgres
@pytest.mark.parametrize("name", TINY)
def test_a_bench_reports_its_ratios_on_postgres(pg_available: None, name: str) -> None:
    lines = _bench(name, *TINY[name], "--backend", "postgres")
    ratios = [line for line in lines if line["kind"] == "ratio"]
    assert ratios
    assert {line["backend"] for line in ratios} == {"postgres"}


@pytest.mark.postgres
def test_the_live_feed_bench_reports_its_ratio(pg_available: None) -> None:
    lines = _bench("sse", "--runs", "1", "--observers", "2", "--notifies", "2")
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "setup"
    assert "ratio" in kinds
    assert all(line["percentile"] in (50, 99) for line in lines if line["kind"] == "ratio")
