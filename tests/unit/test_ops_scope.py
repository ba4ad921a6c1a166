"""Scope normalisation and argument validation of the built-in ops tools (no database needed).

The harness treats ``tool_name + normalized_scope`` as the identity of a call, so semantically equal
arguments must give identical strings and different ones different strings.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from application.ports import Tool, ToolArgumentsError
from infrastructure.ops_data import sample_services
from infrastructure.tools import builtin_tools

SERVICES = list(sample_services())
WINDOW = {"start": "2026-11-29T10:00:00Z", "end": "2026-11-29T12:00:00Z"}
VALID = {
    "search_logs": {"service": "checkout", **WINDOW},
    "query_metrics": {"service": "checkout", "metric": "error_rate", **WINDOW},
    "list_deployments": dict(WINDOW),
    "list_alerts": dict(WINDOW),
}
moments = st.datetimes(
    min_value=datetime(2026, 11, 27, 22), max_value=datetime(2026, 12, 1, 2), timezones=st.just(UTC)
)


@pytest.fixture(scope="module")
def offline_tools() -> Iterator[dict[str, Tool]]:
    """Tools whose engine is never used: normalising a scope reads no database."""
    engine = create_engine("sqlite://")
    yield {tool.name: tool for tool in builtin_tools(engine)}
    engine.dispose()


# -- canonical form --------------------------------------------------------------------


def test_the_canonical_scope_is_fixed_fields_then_sorted_filters(
    offline_tools: dict[str, Tool],
) -> None:
    arguments = {"contains": "timeout", "level": "ERROR", "service": "checkout"} | WINDOW
    assert offline_tools["search_logs"].normalize_scope(arguments) == (
        "service=checkout;start=2026-11-29T10:00:00Z;end=2026-11-29T12:00:00Z;"
        "contains=timeout;level=ERROR;limit=50"
    )
    assert offline_tools["list_alerts"].normalize_scope(WINDOW) == (
        "service=*;start=2026-11-29T10:00:00Z;end=2026-11-29T12:00:00Z;limit=100"
    )
    escaped = offline_tools["search_logs"].normalize_scope(
        VALID["search_logs"] | {"contains": "a;B=1%"}
    )
    assert ";contains=a%3Bb%3D1%25;limit=50" in escaped


EQUAL = [
    ("search_logs", {"service": " Checkout "}, {"service": "checkout"}),
    ("search_logs", {"start": "2026-11-29T11:00:00+01:00"}, {"start": "2026-11-29T10:00:00Z"}),
    ("search_logs", {"start": "2026-11-29 10:00"}, {"start": "2026-11-29t10:00:00z"}),
    ("search_logs", {"end": "2026-11-29T07:00:00-05:00"}, {"end": "2026-11-29T12:00:00.000Z"}),
    ("search_logs", {"level": "warning"}, {"level": "WARN"}),
    ("search_logs", {"contains": "  Upstream TIMEOUT "}, {"contains": "upstream timeout"}),
    ("search_logs", {"contains": "   "}, {"contains": None}),
    ("search_logs", {"limit": 50}, {"level": None}),
    ("query_metrics", {"metric": "Error_Rate"}, {"metric": "error_rate"}),
    ("list_alerts", {"service": "*"}, {"service": None}),
    ("list_deployments", {"limit": 100}, {}),
]
DIFFERENT = [
    ("search_logs", {"service": "payments"}, {}),
    ("search_logs", {"start": "2026-11-29T10:00:00.000001Z"}, {}),
    ("search_logs", {"end": "2026-11-29T12:00:01Z"}, {}),
    ("search_logs", {"level": "ERROR"}, {"level": "WARN"}),
    ("search_logs", {"contains": "time out"}, {"contains": "timeout"}),
    ("search_logs", {"contains": "a;level=ERROR"}, {"contains": "a", "level": "ERROR"}),
    ("search_logs", {"limit": 51}, {}),
    ("query_metrics", {"metric": "cpu_pct"}, {}),
    ("list_alerts", {"service": "search"}, {}),
]


@pytest.mark.parametrize(("tool", "left", "right"), EQUAL)
def test_equivalent_arguments_give_the_same_scope(
    offline_tools: dict[str, Tool], tool: str, left: dict[str, Any], right: dict[str, Any]
) -> None:
    normalize = offline_tools[tool].normalize_scope
    assert normalize(VALID[tool] | left) == normalize(VALID[tool] | right)


@pytest.mark.parametrize(("tool", "left", "right"), DIFFERENT)
def test_different_arguments_give_different_scopes(
    offline_tools: dict[str, Tool], tool: str, left: dict[str, Any], right: dict[str, Any]
) -> None:
    normalize = offline_tools[tool].normalize_scope
    assert normalize(VALID[tool] | left) != normalize(VALID[tool] | right)


Base = tuple[str, datetime, datetime, str | None, str | None, int]
bases: st.SearchStrategy[Base] = st.tuples(
    st.sampled_from(SERVICES),
    moments,
    st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=3)),
    st.none() | st.sampled_from(["INFO", "WARN", "ERROR"]),
    st.none() | st.text(alphabet="ab;=%_", min_size=1, max_size=4),
    st.integers(1, 500),
).map(lambda b: (b[0], b[1], b[1] + b[2], b[3], b[4], b[5]))


def _render_time(draw: st.DrawFn, moment: datetime) -> str:
    """One of many spellings of the same instant."""
    offset = timezone(timedelta(minutes=draw(st.integers(-12 * 4, 14 * 4)) * 15))
    text = moment.astimezone(offset).isoformat(sep=draw(st.sampled_from(["T", " ", "t"])))
    if offset.utcoffset(None) == timedelta(0):
        text = draw(st.sampled_from([text, text[:-6] + "Z", text[:-6] + "z", text[:-6]]))
    return text


@st.composite
def renderings(draw: st.DrawFn, base: Base) -> dict[str, Any]:
    """The base scope as arguments, in a random but equivalent spelling and key order."""
    service, start, end, level, contains, limit = base
    spelled: dict[str, Any] = {
        "service": draw(st.sampled_from([service, service.upper(), f" {service.title()} "])),
        "start": _render_time(draw, start),
        "end": _render_time(draw, end),
    }
    if level is not None or draw(st.booleans()):
        spelled["level"] = level and draw(st.sampled_from([level, level.lower()]))
    if contains is not None or draw(st.booleans()):
        spelled["contains"] = contains and draw(st.sampled_from([contains, f" {contains.upper()}"]))
    if limit != 50 or draw(st.booleans()):
        spelled["limit"] = limit
    order = draw(st.permutations(list(spelled)))
    return {key: spelled[key] for key in order}


@st.composite
def mutations(draw: st.DrawFn, base: Base) -> Base:
    """The same base, or the base with one field changed (the change may be a no-op)."""
    service, start, end, level, contains, limit = base
    choice = draw(st.integers(0, 6))
    nudge = timedelta(microseconds=draw(st.sampled_from([1, 1000, 1_000_000])))
    changed: list[Base] = [
        base,
        (draw(st.sampled_from(SERVICES)), start, end, level, contains, limit),
        (service, start - nudge, end, level, contains, limit),
        (service, start, end + nudge, level, contains, limit),
        (service, start, end, draw(st.none() | st.just("ERROR")), contains, limit),
        (
            service,
            start,
            end,
            level,
            (contains or "") + draw(st.sampled_from(["a", ";", "="])),
            limit,
        ),
        (service, start, end, level, contains, draw(st.integers(1, 500))),
    ]
    return changed[choice]


@hsettings(max_examples=300, deadline=None)
@given(data=st.data(), base=bases)
def test_scopes_are_equal_exactly_when_the_arguments_mean_the_same(
    offline_tools: dict[str, Tool], data: st.DataObject, base: Base
) -> None:
    other = data.draw(mutations(base))
    normalize = offline_tools["search_logs"].normalize_scope
    left = normalize(data.draw(renderings(base)))
    right = normalize(data.draw(renderings(other)))
    assert (left == right) == (base == other)


# -- validation ---------------------------------------------------------------------------------

MISSING = object()
INVALID = [
    ("search_logs", {"service": MISSING}, "service"),
    ("search_logs", {"service": 42}, "service"),
    ("search_logs", {"service": ""}, "service"),
    ("search_logs", {"service": "check out"}, "service"),
    ("search_logs", {"service": "*"}, "service"),
    ("search_logs", {"start": MISSING}, "start"),
    ("search_logs", {"start": "yesterday"}, "start"),
    ("search_logs", {"start": 1764410400}, "start"),
    ("search_logs", {"end": MISSING}, "end"),
    ("search_logs", {"end": "2026-11-29T25:00:00Z"}, "end"),
    ("search_logs", {"end": "2026-11-29T09:00:00Z"}, "end"),
    ("search_logs", {"end": "2026-11-29T11:00:00+01:00"}, "end"),
    ("search_logs", {"window": "15m"}, "window"),
    ("search_logs", {"level": "LOUD"}, "level"),
    ("search_logs", {"level": 3}, "level"),
    ("search_logs", {"contains": 5}, "contains"),
    ("search_logs", {"contains": "x" * 201}, "contains"),
    ("search_logs", {"limit": 0}, "limit"),
    ("search_logs", {"limit": 501}, "limit"),
    ("search_logs", {"limit": True}, "limit"),
    ("search_logs", {"limit": "10"}, "limit"),
    ("query_metrics", {"metric": MISSING}, "metric"),
    ("query_metrics", {"metric": "p99 latency"}, "metric"),
    ("query_metrics", {"level": "ERROR"}, "level"),
    ("list_deployments", {"service": "Check/out"}, "service"),
    ("list_alerts", {"start": "2026-11-29T12:00:00Z"}, "end"),
]


@pytest.mark.parametrize(("tool", "changes", "field"), INVALID)
def test_every_invalid_argument_is_refused_naming_its_field(
    offline_tools: dict[str, Tool], tool: str, changes: dict[str, Any], field: str
) -> None:
    arguments = {k: v for k, v in (VALID[tool] | changes).items() if v is not MISSING}
    for call in (offline_tools[tool].normalize_scope, offline_tools[tool].run):
        with pytest.raises(ToolArgumentsError) as refused:
            call(arguments)
        assert str(refused.value).startswith(f"{field}: ")
