"""The benches run end to end, tiny, and end their report with JSON lines; no figure is checked.

Each runs as ``python -m bench.NAME`` in a process of its own, as the README documents, on a
fresh place of its own (a temporary SQLite directory, or a schema of ``harness_bench`` on the
local PostgreSQL server that it drops again; ``bench.throughput`` a database of its own).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bench.common import pg_conninfo
from bench.projections.phases import COMMITS, EMPTYING, INSERTS, READING, RUNNER, rows_of
from projections.registry import all_projections

ROOT = Path(__file__).resolve().parents[3]
TINY = {
    "append": ["--events", "8"],
    "run": ["--runs", "5"],
    "projections": ["--runs", "2", "--repeat", "1", "--prefix", "5"],
    "metrics": ["--runs", "50", "--scrapes", "5"],
    "growth": ["--sizes", "12", "24", "--samples", "3"],
}
"""The smallest options of the benches that measure both backends."""


WITHOUT_LANGGRAPH = (
    "import runpy, sys\n"
    "sys.modules['langgraph'] = None  # as if the bench extra were not installed\n"
    "runpy.run_module('bench.peers', run_name='__main__', alter_sys=True)\n"
)
"""``python -m bench.peers`` where ``import langgraph`` fails, installed or not (CI: only dev)."""


def _run(run: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _bench(name: str, *args: str) -> list[dict[str, Any]]:
    """Run ``python -m bench.NAME ARGS``; the JSON objects its report ends with."""
    done = _run([sys.executable, "-m", f"bench.{name}", *args])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("name", TINY)
def test_a_bench_reports_its_ratios_on_sqlite(name: str) -> None:
    lines = _bench(name, *TINY[name], "--backend", "sqlite")
    ratios = [line for line in lines if line["kind"] == "ratio"]
    assert ratios
    assert {line["backend"] for line in ratios} == {"sqlite"}
    if name == "growth":  # the heavy runs are scripted: each ends as its script says
        heavy = {line["name"]: line["outcome"] for line in lines if line["kind"] == "heavy"}
        assert heavy == {"5MB result": "SUCCESS/FALLBACK", "50 tool calls": "SUCCESS/FALLBACK"}


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_the_rebuild_bench_takes_a_rebuild_apart(request: Any, backend: str) -> None:
    """``--phases``: the parts are one after the other within the rebuild, every projection's."""
    if backend == "postgres":
        request.getfixturevalue("pg_available")
    lines = _bench("projections", *TINY["projections"], "--backend", backend, "--phases")
    (phases,) = [line for line in lines if line["kind"] == "phases"]
    parts = phases["seconds"]
    assert list(parts) == [
        EMPTYING,
        READING,
        *(rows_of(p.name) for p in all_projections()),
        INSERTS,
        COMMITS,
        RUNNER,
    ]
    assert all(seconds >= 0 for seconds in parts.values())  # none overlapped another
    assert parts[READING] > 0 and parts[INSERTS] > 0 and parts[COMMITS] > 0
    assert phases["backend"] == backend and phases["total_s"] > parts[READING]
    assert phases["ceiling_s"] > 0 and phases["beyond_reading_over_ceiling"] > 0


@pytest.mark.postgres
@pytest.mark.parametrize("name", TINY)
def test_a_bench_reports_its_ratios_on_postgres(pg_available: None, name: str) -> None:
    lines = _bench(name, *TINY[name], "--backend", "postgres")
    ratios = [line for line in lines if line["kind"] == "ratio"]
    assert ratios
    assert {line["backend"] for line in ratios} == {"postgres"}
    if name == "append":  # our recorder against the library's, single and batched
        assert {line["mode"] for line in ratios if "recorder_over_bare" in line} == {
            "single",
            "batch",
        }


@pytest.mark.postgres
def test_the_live_feed_bench_reports_its_ratio(pg_available: None) -> None:
    lines = _bench("sse", "--runs", "1", "--observers", "2", "--notifies", "2")
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "setup"
    assert "ratio" in kinds
    assert all(line["percentile"] in (50, 99) for line in lines if line["kind"] == "ratio")


def test_the_peers_bench_without_its_extra_names_the_install_command() -> None:
    done = _run([sys.executable, "-c", WITHOUT_LANGGRAPH, "--runs", "5", "--backend", "sqlite"])
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "'bench' extra" in done.stderr
    assert "pip install -e '.[bench]' -c requirements/bench-constraints.txt" in done.stderr


def _ours_only(backend: str, model: str) -> None:
    """``--ours-only`` needs no LangGraph: the project's run measured alone, no peer, no ratio."""
    args = ["--ours-only", "--runs", "5", "--backend", backend, "--model", model]
    done = _run([sys.executable, "-c", WITHOUT_LANGGRAPH, *args])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(line["kind"], line["backend"], line["measure"]) for line in lines] == [
        ("run", backend, "harness")
    ]
    (line,) = lines
    assert line["runs"] == 5 and line["model"] == model
    assert line["p50_ms"] <= line["p95_ms"]
    assert line["model_calls"] > 0 and line["cpu_ms_per_run"] > 0
    assert line["minus_model_mean_ms"] < line["mean_ms"]  # the model's time was taken out


@pytest.mark.parametrize("model", ["external", "offline"])
def test_the_peers_bench_measures_our_run_alone_on_sqlite(model: str) -> None:
    _ours_only("sqlite", model)


@pytest.mark.postgres
def test_the_peers_bench_measures_our_run_alone_on_postgres(pg_available: None) -> None:
    _ours_only("postgres", "external")


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_the_run_bench_calls_the_stub_model_over_http(request: Any, backend: str) -> None:
    """``--model external``: the same diagnosis through the stub, committing before each call."""
    if backend == "postgres":
        request.getfixturevalue("pg_available")
    lines = _bench("run", "--runs", "5", "--backend", backend, "--model", "external")
    (shape,) = [line for line in lines if line["kind"] == "shape"]
    assert shape["model"] == "external" and shape["outcome"] == "SUCCESS/SUCCESS"
    assert shape["transactions"] > shape["model_calls"] > 0  # a commit before every model call
    measures = {line["measure"] for line in lines if line["kind"] == "run"}
    assert {"harness", "harness-ports", "harness-model", "floor"} <= measures


@pytest.mark.postgres
def test_the_throughput_bench_reports_one_worker_and_drops_its_database(
    pg_available: None,
) -> None:
    args = ["--seconds", "1", "--workers", "1", "--clients", "2", "--runs-per-round", "2"]
    done = _run([sys.executable, "-m", "bench.throughput", *args])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(line["kind"], line["workers"]) for line in lines] == [("throughput", 1)]
    (row,) = lines
    assert row["runs"] >= 2 and row["failed"] == 0
    assert row["clients"] == 2 and row["server_processes"] >= 1
    assert set(row["lock_wait_share"]) == {"event_table", "notify", "other"}
    assert row["lock_samples"] > 0 and row["peak_connections"] > 0
    assert row["cpu_ms_per_run_server"] > 0 and row["cpu_ms_per_run_postgres"] > 0
    (database,) = re.findall(r"\((harness_tp_[0-9a-f]{12})\)", done.stdout)
    with psycopg.connect(pg_conninfo("postgres")) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
        assert found.fetchone() is None


@pytest.mark.parametrize(
    "args", [["--clients", "0"], ["--workers", "-1"], ["--seconds", "nan"], ["--workers", "1.5"]]
)
def test_the_throughput_bench_refuses_a_bad_argument_before_it_starts_anything(
    args: list[str],
) -> None:
    done = _run([sys.executable, "-m", "bench.throughput", *args])
    assert done.returncode == 2
    assert done.stdout == ""
    assert "error: argument" in done.stderr and "Traceback" not in done.stderr


def test_the_growth_bench_traces_what_the_worker_holds_between_two_sizes() -> None:
    args = ["--trace-memory", "--sizes", "6", "3", "--backend", "sqlite"]
    done = _run([sys.executable, "-m", "bench.growth", *args])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "-- memory on sqlite: 3 -> 6 runs --" in done.stdout
    assert re.search(r"traced Python heap still held: \d+ kB\n", done.stdout)
    assert "-- top 15 holders by traceback --" in done.stdout
    assert "-- top 15 types by growth in live objects --" in done.stdout


def test_the_run_cpu_bench_prints_cpu_per_run_and_a_profile() -> None:
    done = _run([sys.executable, "-m", "bench.run.cpu", "--runs", "2", "--backend", "sqlite"])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "-- profile of 2 runs on sqlite, by cumulative --" in done.stdout
    assert re.search(r"process CPU per run, ms, 5 batches of 2: [\d. ]+\n", done.stdout)
