"""The operators' routes over real HTTP: daily totals, workers' leases, audit verify on demand.

``GET /v1/stats/daily`` answers what SQL over ``diagnosis_run`` and ``run_daily`` says, on both
backends; ``GET /v1/workers`` lists the leases with their verdicts; ``POST /v1/audit/verify``
reports what ``harness audit verify --db`` does: clean on a clean store, the tampered event when
a stored row was edited, and a 409 while another verification runs. Only auditors and admins
may use them (a user gets a 403 that says why).
"""

from __future__ import annotations

import math
import os
import socket
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import Engine, select

from api.audit_verify import VERIFYING
from api.auth import Role
from application.audit.checkpoints import record_checkpoint
from infrastructure.analytics_tables import analytics_model_call, analytics_tool_call
from infrastructure.audit_keys import generate, load_signer
from infrastructure.leases import SqlLeases, WorkerIdentity
from infrastructure.read_tables import diagnosis_run, run_daily
from infrastructure.settings import ApiKey, Settings
from tests.api._serve import Served, read_all, served_client
from tests.helpers import tampered_routing_decision

HELLO = "hello"
DIAGNOSIS = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"
VAGUE = "Why was checkout slow on 2025-01-01?"
"""A diagnosis without a time window: a MISSING_REQUIRED_CONTEXT fallback."""
DAILY, WORKERS, VERIFY = "/v1/stats/daily", "/v1/workers", "/v1/audit/verify"
TOOL_STATS, MODEL_STATS = "/v1/stats/tools", "/v1/stats/models"
KEYS = {"ann": "ann-user-key-0d9c8b7a6f5e4d3c", "audrey": "audrey-auditor-key-1a2b3c4d5e6f7a8b"}
KEYS["adam"] = "adam-admin-key-9f8e7d6c5b4a3f2e"
ROLES: dict[str, Role] = {"ann": "user", "audrey": "auditor", "adam": "admin"}


def finish(client: httpx.Client, query: str) -> str:
    """Start a run detached, read its stream to the end; its id."""
    created = client.post("/v1/runs", json={"query": query})
    assert created.status_code == 202, created.text
    read_all(client, "GET", created.json()["stream"])
    return str(created.json()["run_id"])


def engine_of(served: Served) -> Engine:
    """The engine the served app reads its tables with (a real SQLite file or PostgreSQL)."""
    found: Engine = served.app.state.worker.engine
    return found


def expected_daily(engine: Engine) -> list[dict[str, Any]]:
    """``run_daily`` as derived here from ``diagnosis_run``: count and nearest-rank p50/p95."""
    column = diagnosis_run.c
    keys = ("intent", "release_outcome", "fallback_type", "termination_state")
    with engine.connect() as connection:
        found = connection.execute(
            select(column.created_at, column.duration_ms, *(column[k] for k in keys)).where(
                column.status != "RUNNING"
            )
        ).all()
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for created, duration, *group in found:
        day = (created if created.tzinfo else created.replace(tzinfo=UTC)).astimezone(UTC)
        groups[(day.date().isoformat(), *(k or "" for k in group))].append(duration or 0)
    rows = []
    for key, durations in sorted(groups.items()):
        ranked = sorted(durations)
        rank = {p: ranked[max(1, math.ceil(p / 100 * len(ranked))) - 1] for p in (50, 95)}
        rows.append(
            {
                **dict(zip(("day", *keys), key, strict=True)),
                "runs": len(ranked),
                "duration_p50_ms": float(rank[50]),
                "duration_p95_ms": float(rank[95]),
            }
        )
    return rows


def test_daily_totals_are_what_sql_over_the_run_tables_says(settings: Settings) -> None:
    with served_client(settings) as served:
        client = served.client
        for query in (HELLO, HELLO, DIAGNOSIS, VAGUE, HELLO):
            finish(client, query)
        today = datetime.now(UTC).date().isoformat()
        answer = client.get(DAILY, params={"from": today, "to": today})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        shown = [{k: row[k] for k in expected_daily(engine_of(served))[0]} for row in body["data"]]
        assert shown == expected_daily(engine_of(served))
        assert sorted(r["release_outcome"] for r in shown) == ["FALLBACK", "SUCCESS", "SUCCESS"]
        assert [r["runs"] for r in shown if r["intent"] == "SYSTEM_CHAT"] == [3]
        assert sum(r["runs"] for r in shown) == 5
        with engine_of(served).connect() as connection:
            stored = [dict(r) for r in connection.execute(select(run_daily)).mappings()]
        assert len(stored) == body["count"] == 3
        assert {(r["intent"], r["tokens_in"]) for r in stored} == {
            (r["intent"], r["tokens_in"]) for r in body["data"]
        }
        assert (
            client.get(DAILY, params={"from": "2000-01-01", "to": "2000-01-31"}).json()["data"]
            == []
        )


def test_tool_and_model_stats_are_what_sql_over_their_facts_says(settings: Settings) -> None:
    """``/v1/stats/tools`` and ``/v1/stats/models`` answer their tables, grouped from the facts."""
    with served_client(settings) as served:
        client = served.client
        for query in (DIAGNOSIS, VAGUE, HELLO):
            finish(client, query)
        today = datetime.now(UTC).date().isoformat()
        tools = client.get(TOOL_STATS, params={"from": today, "to": today})
        models = client.get(MODEL_STATS, params={"from": today, "to": today})
        assert tools.status_code == models.status_code == 200, (tools.text, models.text)
        with engine_of(served).connect() as connection:
            calls = [dict(r) for r in connection.execute(select(analytics_tool_call)).mappings()]
            steps = [dict(r) for r in connection.execute(select(analytics_model_call)).mappings()]
        per_tool: dict[tuple[str, ...], int] = defaultdict(int)
        for call in calls:
            per_tool[(call["tool"], call["evidence_status"], call["error_code"])] += 1
        shown = tools.json()
        assert {(r["tool"], r["outcome"], r["error_code"]): r["calls"] for r in shown["data"]} == (
            dict(per_tool)
        )
        assert shown["count"] == len(per_tool) > 0 and shown["first_day"] == today
        per_model: dict[tuple[str, ...], list[int]] = defaultdict(lambda: [0, 0, 0])
        for step in steps:
            entry = per_model[(step["model"], step["purpose"])]
            entry[0] += 1
            entry[1] += step["tokens_in"]
            entry[2] += step["tokens_out"]
        assert {
            (r["model"], r["purpose"]): [r["calls"], r["tokens_in"], r["tokens_out"]]
            for r in models.json()["data"]
        } == dict(per_model)
        empty = client.get(TOOL_STATS, params={"from": "2000-01-01", "to": "2000-01-31"})
        assert empty.json()["data"] == []
        wrong = client.get(MODEL_STATS, params={"to": "2026-02-30"})
        assert wrong.status_code == 422 and wrong.json()["detail"][0]["loc"] == ["query", "to"]


@pytest.mark.parametrize(
    ("params", "first", "last"),
    [
        ({"from": "2026-12-05", "to": "2026-12-01"}, "2026-12-05", "2026-12-01"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "2025-01-01", "2026-01-01"),
        ({"to": "2026-01-14"}, "2026-01-01", "2026-01-14"),
        ({"to": "0001-01-03"}, "0001-01-01", "0001-01-03"),
    ],
)
def test_the_days_asked_are_bounded_and_said(
    sqlite_settings: Settings, params: dict[str, str], first: str, last: str
) -> None:
    """At most 366 days (an earlier from moves up), two weeks by default; from after to: none."""
    with served_client(sqlite_settings, sample=False) as served:
        answer = served.client.get(DAILY, params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert (body["first_day"], body["last_day"], body["data"]) == (first, last, [])
        wrong = served.client.get(DAILY, params={"from": "2026-13-01"})
        assert wrong.status_code == 422 and wrong.json()["detail"][0]["loc"] == ["query", "from"]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A service with a user's, an auditor's and an admin's key, and one finished run."""
    folder = tmp_path_factory.mktemp("ops")
    keys = [ApiKey(key=SecretStr(KEYS[n]), name=n, role=r) for n, r in ROLES.items()]
    settings = Settings(database_url=f"sqlite:///{folder / 'harness.db'}", api_keys=keys)
    with served_client(settings) as served:
        with httpx.Client(base_url=served.client.base_url, timeout=60) as ann:
            ann.headers["Authorization"] = f"Bearer {KEYS['ann']}"
            finish(ann, HELLO)
        yield served


def as_(served: Served, name: str, method: str, path: str) -> httpx.Response:
    """``method path`` with ``name``'s key."""
    headers = {"Authorization": f"Bearer {KEYS[name]}"}
    return served.client.request(method, path, headers=headers)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", DAILY), ("GET", TOOL_STATS), ("GET", MODEL_STATS), ("GET", WORKERS), ("POST", VERIFY)],
)
@pytest.mark.parametrize("name", ["ann", "audrey", "adam"])
def test_only_auditors_and_admins_read_the_operators_routes(
    keyed: Served, name: str, method: str, path: str
) -> None:
    answer = as_(keyed, name, method, path)
    if ROLES[name] == "user":
        assert answer.status_code == 403, answer.text
        detail = answer.json()["detail"]
        assert "the user role may not" in detail and "auditor" in detail, detail
        if path in (DAILY, TOOL_STATS, MODEL_STATS):
            assert "run_daily has no owner column" in detail
        return
    assert answer.status_code == 200, answer.text
    assert answer.json()["clean" if path == VERIFY else "count"] is not None
    assert as_(keyed, name, method, path).status_code == 200  # again: nothing left held


def test_the_workers_route_lists_this_worker_live_and_a_lapsed_lease_expired(
    keyed: Served,
) -> None:
    lapsed = WorkerIdentity("elsewhere:1:feedbeef", "elsewhere", 1, "")
    SqlLeases(engine_of(keyed)).beat(lapsed, -1.0)  # a lease that ran out a second ago
    body = as_(keyed, "audrey", "GET", WORKERS).json()
    states = {lease["worker_id"]: lease for lease in body["data"]}
    assert body["count"] == len(body["data"]) == 2
    (mine,) = [lease for lease in body["data"] if lease["pid"] == os.getpid()]
    assert (mine["host"], mine["state"]) == (socket.gethostname(), "LIVE")
    assert mine["expires_at"] > body["now"] >= mine["beat_at"]
    assert states[lapsed.worker_id]["state"] == "EXPIRED"
    assert "process" not in mine


def test_the_workers_route_judges_the_leases_by_each_backends_clock(served: Served) -> None:
    lapsed = WorkerIdentity("elsewhere:2:0badcafe", "elsewhere", 2, "")
    SqlLeases(engine_of(served)).beat(lapsed, -1.0)
    answer = served.client.get(WORKERS)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    states = {lease["worker_id"]: lease["state"] for lease in body["data"]}
    assert states.pop(lapsed.worker_id) == "EXPIRED"
    assert list(states.values()) == ["LIVE"]  # this worker, beating
    beats = [lease["beat_at"] for lease in body["data"]]
    assert beats == sorted(beats, reverse=True)  # newest beat first


def test_verify_reports_a_clean_store_clean(served: Served) -> None:
    finish(served.client, DIAGNOSIS)
    answer = served.client.post(VERIFY)
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert (report["clean"], report["violations"], report["runs"]) == (True, [], 1)
    assert report["summary"].endswith("no violations")
    assert any(check.startswith("read tables agree with the log") for check in report["checks"])


def test_verify_names_an_event_tampered_in_the_sqlite_file(sqlite_settings: Settings) -> None:
    with served_client(sqlite_settings) as served:
        finish(served.client, DIAGNOSIS)
        with tampered_routing_decision(engine_of(served)) as position:
            report = served.client.post(VERIFY).json()
    assert report["clean"] is False
    chain = [v for v in report["violations"] if v["rule"] == "chain"]
    assert len(chain) == 1, report["violations"]
    assert chain[0]["event"]["position"] == position
    assert chain[0]["event"]["type"] == "ROUTING_DECISION"
    assert "its chain link does not match its content" in chain[0]["text"]
    assert report["by_rule"]["chain"] == 1 and "violation" in report["summary"]


def test_a_second_verify_while_one_runs_is_a_409(keyed: Served) -> None:
    with VERIFYING:  # what a verification in progress on this worker holds
        answer = as_(keyed, "adam", "POST", VERIFY)
    assert answer.status_code == 409, answer.text
    assert "already running" in answer.json()["detail"]
    assert as_(keyed, "adam", "POST", VERIFY).status_code == 200


def test_verify_checks_the_services_own_signatures_with_its_public_key(
    sqlite_settings: Settings, tmp_path: Path
) -> None:
    private, _, named = generate(tmp_path)
    signing = sqlite_settings.model_copy(update={"audit_signing_key_file": private})
    with served_client(signing) as served:
        finish(served.client, DIAGNOSIS)
        assert record_checkpoint(served.store, sign=load_signer(private).sign) is not None
        report = served.client.post(VERIFY).json()
    assert report["clean"] is True, report["violations"]
    assert any(
        c.startswith(f"signatures ({named}): checkpoints signed up to") for c in report["checks"]
    )
