"""The shipped Prometheus rules and Grafana dashboard against the real thing.

Debian's ``promtool`` checks the rules and lints a real scrape of the served app; Debian's
``prometheus`` then scrapes that app every second, loads the rules and evaluates them, and
answers every query of the dashboard. ``scripts/test`` installs the package (it starts no
server). Each metric a query names must be a family the service serves.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from tests.api._serve import Served, free_port, served_client, wait_until_up

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "docs" / "ops" / "alerts.yml"
DASHBOARD = ROOT / "docs" / "ops" / "grafana-dashboard.json"
PROMTOOL, PROMETHEUS = Path("/usr/bin/promtool"), Path("/usr/bin/prometheus")
DEADLINE_S = 60.0
SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def _installed(tool: Path) -> Path:
    if not tool.exists():
        pytest.fail(f"{tool} is missing: run scripts/test (it installs Debian's prometheus)")
    return tool


def until(condition: Callable[[], Any], what: str) -> Any:
    """Poll ``condition`` until it gives something true (a condition, never a fixed sleep)."""
    deadline = time.monotonic() + DEADLINE_S
    while not (found := condition()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)
    return found


def queries() -> list[str]:
    """Every query of the dashboard's panels."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The app on a fresh SQLite file with the offline model, after a few runs over HTTP."""
    folder = tmp_path_factory.mktemp("served")
    settings = Settings(database_url=f"sqlite:///{folder / 'harness.db'}")
    with served_client(settings) as served:
        for incident in sample_incidents()[:3]:
            with served.client.stream("POST", "/v1/chat", json={"query": incident.question}) as r:
                assert r.status_code == 200
                r.read()
        served.client.get("/v1/runs/00000000-0000-4000-8000-000000000000")  # a 404 too
        yield served


def test_the_alert_rules_pass_promtool() -> None:
    done = subprocess.run(
        [_installed(PROMTOOL), "check", "rules", RULES], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 8 rules found" in done.stdout


def test_a_real_scrape_passes_promtool_check_metrics(served: Served) -> None:
    scrape = served.client.get("/metrics")
    assert scrape.status_code == 200
    done = subprocess.run(
        [_installed(PROMTOOL), "check", "metrics"],
        input=scrape.text,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_metric_the_dashboard_and_rules_name_is_served(served: Served) -> None:
    declared = set(re.findall(r"^# TYPE (\S+) ", served.client.get("/metrics").text, re.M))
    named = set(re.findall(r"\b(harness_[a-z_]+)", " ".join(queries()) + RULES.read_text()))
    assert named, "the dashboard and rules name no metric"
    for name in sorted(named):
        family = next((name.removesuffix(s) for s in SUFFIXES if name.endswith(s)), name)
        assert family in declared or name in declared, f"{name}: not served by /metrics"


def test_prometheus_scrapes_the_service_evaluates_the_rules_and_answers_the_dashboard(
    served: Served, tmp_path: Path
) -> None:
    target = str(served.client.base_url).removeprefix("http://")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: ['{RULES}']\n"
        "scrape_configs:\n"
        f"  - job_name: harness\n    static_configs: [{{targets: ['{target}']}}]\n"
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [_installed(PROMETHEUS), f"--config.file={config}", f"--storage.tsdb.path={tmp_path}/tsdb",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=error"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until_up(base, process, "/-/ready")
        with httpx.Client(base_url=base, timeout=10) as prometheus:
            _check(prometheus)
    finally:
        process.terminate()
        process.communicate(timeout=30)


def _check(prometheus: httpx.Client) -> None:
    def query(expr: str) -> list[Any]:
        answer = prometheus.get("/api/v1/query", params={"query": expr}).json()
        assert answer["status"] == "success", (expr, answer)
        return list(answer["data"]["result"])

    until(lambda: query('up{job="harness"} == 1'), "the service scraped and up")
    until(lambda: query("count_over_time(harness_build_info[1m]) >= 2"), "two scrapes for rates")
    for expr in queries():
        query(expr)  # every query parses and evaluates
    assert query("max by (release_outcome) (harness_runs_total)")[0]["value"][1] == "3"
    routes = {r["metric"]["route"] for r in query("harness_http_requests_total")}
    assert {"/v1/chat", "/v1/runs/{run_id}", "/metrics"} <= routes

    def evaluated() -> list[Any]:
        groups = prometheus.get("/api/v1/rules").json()["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        done = len(rules) == 8 and all(r["lastEvaluation"][:4] != "0001" for r in rules)
        return rules if done else []

    rules = until(evaluated, "every rule evaluated")
    assert {rule["health"] for rule in rules} == {"ok"}, rules
    firing = [r["name"] for r in rules if r["state"] != "inactive"]
    assert firing == [], firing  # a healthy service that has answered its runs
