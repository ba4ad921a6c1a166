"""The read side's row cache on both stores: a dropped row is never written, a stored one stays."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from infrastructure.read_store import SqlReadStore

if TYPE_CHECKING:
    from sqlalchemy import Engine


def _invocation(stream: str) -> dict[str, object]:
    return {"stream_id": stream, "tool": "list_alerts", "origin": "builtin", "started_us": 0}


def _stored(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        found = connection.exec_driver_sql("SELECT stream_id FROM metric_invocation")
        return sorted(row[0] for row in found)


def test_a_row_added_and_dropped_in_one_batch_never_reaches_the_table(engine: Engine) -> None:
    read = SqlReadStore(engine)
    read.ensure_tracking(["metrics"])
    with read.transaction() as view:
        rows = view.rows("metric_invocation", "stream_id")
        rows.add(_invocation("kept"))
        rows.add(_invocation("dropped"))
        assert rows.drop("dropped") is False  # nothing stored: nothing for the caller to delete
        assert rows.get("dropped") is None
        assert rows.flush() == 1
    assert _stored(engine) == ["kept"]


def test_a_stored_row_dropped_reads_as_missing_and_is_left_to_the_caller(engine: Engine) -> None:
    read = SqlReadStore(engine)
    read.ensure_tracking(["metrics"])
    with read.transaction() as view:
        view.insert("metric_invocation", [_invocation("old")])
    with read.transaction() as view:
        rows = view.rows("metric_invocation", "stream_id")
        row = rows.get("old")
        assert row is not None
        row["tool"] = "changed"
        assert rows.drop("old") is True  # stored: the caller deletes it
        assert rows.get("old") is None  # for the rest of the batch, as after the delete
        assert rows.drop("never-seen") is False
        assert rows.flush() == 0  # the change to a dropped row is not written back
    with engine.connect() as connection:
        tools = connection.exec_driver_sql("SELECT tool FROM metric_invocation").all()
    assert [tuple(t) for t in tools] == [("list_alerts",)]


def test_a_cache_flushes_once_a_batch(engine: Engine) -> None:
    """Its new rows are only appended: a change after the flush would never reach them."""
    read = SqlReadStore(engine)
    read.ensure_tracking(["metrics"])
    with read.transaction() as view:
        rows = view.rows("metric_invocation", "stream_id")
        rows.add(_invocation("new"))["tool"] = "search_logs"
        assert rows.flush() == 1
        with pytest.raises(RuntimeError, match="already flushed"):
            rows.flush()
    with engine.connect() as connection:
        tools = connection.exec_driver_sql("SELECT stream_id, tool FROM metric_invocation").all()
    assert [tuple(t) for t in tools] == [("new", "search_logs")]
