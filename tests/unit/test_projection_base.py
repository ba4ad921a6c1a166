"""The read side's value conversions: JSON text, SQLite date-times, binary COPY types."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum
from typing import Any
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import sqlite
from sqlalchemy.types import DateTime

from application.view_port import _slow_encode, encode_json, jsonable
from infrastructure.bulk_sql import _copy_type, sqlite_datetime
from infrastructure.read_tables import metadata


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Pair:
    left: Any
    right: Any


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),  # beyond 64 bits: the fallback encoder
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.sampled_from(Colour),
    st.uuids(),
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5))])),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(), inner, max_size=4),
        st.dictionaries(st.integers(-99, 99), inner, max_size=4),  # keys not text: the option
        st.builds(Pair, inner, inner),
    ),
    max_leaves=12,
)


@given(values)
def test_encode_json_means_what_the_standard_encoder_means(value: Any) -> None:
    assert json.loads(encode_json(value)) == json.loads(_slow_encode(value))


def test_encode_json_writes_domain_values_plainly() -> None:
    when = datetime(2026, 11, 29, 10, 0, 0, 123456, tzinfo=UTC)
    ident = UUID("12345678-1234-5678-1234-567812345678")
    encoded = jsonable({"c": Colour.RED, "id": ident, "at": when, "p": Pair((1, 2), {3, 1})})
    assert encoded == {
        "c": "red",
        "id": str(ident),
        "at": "2026-11-29T10:00:00.123456+00:00",
        "p": {"left": [1, 2], "right": [1, 3]},
    }
    assert json.loads(encode_json(2**80)) == 2**80


@given(
    st.datetimes(
        min_value=datetime(1, 1, 1),
        timezones=st.one_of(st.none(), st.just(UTC), st.just(timezone(timedelta(hours=9)))),
    )
)
def test_sqlite_datetime_is_sqlalchemys_own_storage_format(value: datetime) -> None:
    dialect = sqlite.dialect()
    theirs = DateTime().dialect_impl(dialect).bind_processor(dialect)
    assert theirs is not None
    assert sqlite_datetime(value) == theirs(value)
    assert sqlite_datetime(None) is None


def test_every_read_table_column_has_a_binary_copy_type() -> None:
    found = {
        f"{table.name}.{column.name}": _copy_type(column.type)
        for table in metadata.sorted_tables
        for column in table.columns
    }
    assert found["trace_event.position"] == "int8"
    assert found["trace_event.timestamp"] == "timestamptz"
    assert found["trace_event.attributes"] == "text"  # already-encoded JSON
    assert found["sse_run.closed"] == "bool"
    assert found["run_daily.duration_p50_ms"] == "float8"
    assert found["diagnosis_run.tokens_in"] == "int4"
