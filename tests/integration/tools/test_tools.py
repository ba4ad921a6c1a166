"""The sample ops data set and the built-in tools over it, on an SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy import Engine, select

from application.ports import Tool, ToolExecutionError
from infrastructure.ops_data import (
    SampleIncident,
    create_ops_tables,
    load_sample,
    ops_logs,
    ops_metadata,
    sample_incidents,
)
from infrastructure.tools import builtin_tools

SAMPLE: Mapping[str, Any] = json.loads(
    resources.files("infrastructure").joinpath("sample/ops_sample.json").read_text("utf-8")
)
INCIDENTS = sample_incidents()
TOOL_NAMES = ("search_logs", "query_metrics", "list_deployments", "list_alerts")
WINDOW = {"start": "2026-11-29T10:00:00Z", "end": "2026-11-29T12:00:00Z"}
VALID = {
    "search_logs": {"service": "checkout", **WINDOW},
    "query_metrics": {"service": "checkout", "metric": "error_rate", **WINDOW},
    "list_deployments": dict(WINDOW),
    "list_alerts": dict(WINDOW),
}


@pytest.fixture
def tools(engine: Engine) -> dict[str, Tool]:
    """The built-in tools over the loaded sample."""
    load_sample(engine)
    return {tool.name: tool for tool in builtin_tools(engine)}


def _rows(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    with engine.connect() as connection:
        return {
            table.name: [tuple(row) for row in connection.execute(select(table).order_by("id"))]
            for table in ops_metadata.sorted_tables
        }


# -- loading ------------------------------------------------------------------------------------


def test_loading_twice_leaves_the_same_rows(engine: Engine) -> None:
    first = load_sample(engine)
    rows = _rows(engine)
    second = load_sample(engine)
    expected = {f"ops_{kind}": len(SAMPLE[kind]) for kind in ("logs", "metrics", "deployments")}
    expected["ops_alerts"] = len(SAMPLE["alerts"])
    assert first == second == expected
    assert _rows(engine) == rows
    first_log = rows["ops_logs"][0]
    assert first_log[1] == datetime(2026, 11, 28, 0, 1, 49, tzinfo=UTC)
    assert first_log[1].utcoffset() == timedelta(0)


def test_sample_plants_four_incidents_of_different_causes() -> None:
    assert len(INCIDENTS) == 4
    assert len({incident.cause for incident in INCIDENTS}) == 4
    assert {incident.service for incident in INCIDENTS} == set(SAMPLE["services"])
    for incident in INCIDENTS:
        assert incident.start < incident.end and incident.start.tzinfo is UTC
        surfaced = {probe.expect for probe in incident.probes}
        assert set(incident.evidence) <= surfaced, incident.id
        assert {probe.tool for probe in incident.probes} <= set(TOOL_NAMES)


# -- evidence -----------------------------------------------------------------------------------


@pytest.mark.parametrize("incident", INCIDENTS, ids=[incident.id for incident in INCIDENTS])
def test_each_probe_surfaces_its_planted_evidence(
    tools: dict[str, Tool], incident: SampleIncident
) -> None:
    for probe in incident.probes:
        output = tools[probe.tool].run(probe.arguments)
        if probe.expect is None:
            assert output.lines == (), (incident.id, probe)
            assert output.scope_description.startswith("no ")
        else:
            assert any(probe.expect in line for line in output.lines), (incident.id, probe)
            assert incident.service in output.scope_description


@pytest.mark.parametrize(
    ("tool", "arguments", "description"),
    [
        (
            "search_logs",
            {"service": "checkout", "start": "2026-11-28T00:00Z", "end": "2026-11-28T06:00Z"}
            | {"level": "ERROR"},
            "no ERROR logs for checkout between 2026-11-28T00:00:00Z and 2026-11-28T06:00:00Z",
        ),
        (
            "search_logs",
            {"service": "billing", "start": "2026-11-28T00:00Z", "end": "2026-12-01T00:00Z"},
            "no logs for billing between",
        ),
        (
            "query_metrics",
            {"service": "checkout", "metric": "queue_depth"} | WINDOW,
            "no queue_depth points for checkout",
        ),
        (
            "list_deployments",
            {"start": "2025-01-01", "end": "2025-02-01"},
            "no deployments for every",
        ),
        ("list_alerts", {"service": "search"} | WINDOW, "no alerts for search between"),
    ],
)
def test_an_empty_scope_gives_no_lines_and_says_which_scope(
    tools: dict[str, Tool], tool: str, arguments: dict[str, Any], description: str
) -> None:
    output = tools[tool].run(arguments)
    assert output.lines == ()
    assert output.scope_description.startswith(description)


def test_limit_keeps_the_earliest_records_and_notes_the_rest(tools: dict[str, Tool]) -> None:
    arguments = {"service": "checkout", "contains": "TIMEOUT", "limit": 3}
    output = tools["search_logs"].run(arguments | {"start": "2026-11-29", "end": "2026-11-30"})
    day = datetime(2026, 11, 29, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC)
    expected = _expected_logs("checkout", *day, None, "timeout")
    assert [line[:20] for line in output.lines[:3]] == [moment for moment, _ in expected[:3]]
    assert len(output.lines) == 3  # records only: the note is the tool's, apart from them
    assert output.notes == (f"[{len(expected) - 3} more records beyond limit=3]",)
    assert output.scope_description.endswith(f": first 3 of {len(expected)}")


def _expected_logs(
    service: str, start: datetime, end: datetime, level: str | None, text: str | None
) -> list[tuple[str, str]]:
    found = []
    for record in SAMPLE["logs"]:
        moment = datetime.fromisoformat(record["timestamp"])
        if record["service"] != service or not start <= moment < end:
            continue
        if level is not None and record["level"] != level:
            continue
        if text is not None and text.lower() not in record["message"].lower():
            continue
        found.append((record["timestamp"], record["message"]))
    return found


moments = st.datetimes(
    min_value=datetime(2026, 11, 27, 22), max_value=datetime(2026, 12, 1, 2), timezones=st.just(UTC)
)


@hsettings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    service=st.sampled_from(SAMPLE["services"]),
    window=st.tuples(moments, moments).filter(lambda pair: pair[0] != pair[1]).map(sorted),
    level=st.none() | st.sampled_from(["INFO", "WARN", "ERROR"]),
    text=st.none()
    | st.sampled_from(["timeout", "POOL", "oomkilled", "x509", "ms", "%", "_", "100/100"]),
)
def test_search_logs_returns_exactly_the_sample_records_in_scope(
    tools: dict[str, Tool],
    service: str,
    window: list[datetime],
    level: str | None,
    text: str | None,
) -> None:
    start, end = window
    arguments: dict[str, Any] = {
        "service": service,
        "start": start.isoformat(),
        "end": end.isoformat(),
    }
    arguments |= {"level": level, "contains": text, "limit": 500}
    output = tools["search_logs"].run(arguments)
    got = [(line.split(" ", 3)[0], line.split(" ", 3)[3]) for line in output.lines]
    assert got == _expected_logs(service, start, end, level, text)


# -- the port and backend failures --------------------------------------------------------------


def test_the_builtin_tools_are_read_only_ops_tools(engine: Engine) -> None:
    tools = builtin_tools(engine)
    assert [tool.name for tool in tools] == list(TOOL_NAMES)
    for tool in tools:
        assert isinstance(tool, Tool)
        assert tool.read_only and tool.required_scope == "ops:read"
        assert tool.max_result_bytes == 8000
        assert tool.parameters["additionalProperties"] is False
        assert {"start", "end"} <= set(tool.parameters["required"])
        assert set(tool.parameters["properties"]) >= set(VALID[tool.name]) | {"limit"}
    assert {tool.max_result_bytes for tool in builtin_tools(engine, max_result_bytes=512)} == {512}


def test_a_tool_over_a_dropped_table_raises_a_backend_error(
    engine: Engine, tools: dict[str, Tool]
) -> None:
    ops_logs.drop(engine)
    with pytest.raises(ToolExecutionError) as failed:
        tools["search_logs"].run(VALID["search_logs"])
    assert failed.value.code == "BACKEND"
    assert "ops_logs" in str(failed.value)
    assert tools["list_alerts"].run(VALID["list_alerts"]).lines  # other tables still answer


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_tool_without_its_tables_raises_a_backend_error(engine: Engine, name: str) -> None:
    tool = {tool.name: tool for tool in builtin_tools(engine)}[name]
    with pytest.raises(ToolExecutionError) as failed:
        tool.run(VALID[name])
    assert failed.value.code == "BACKEND"
    create_ops_tables(engine)
    assert tool.run(VALID[name]).lines == ()
