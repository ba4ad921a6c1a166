"""Feed entries made from a process's own appends: the same rows the feed follower will write.

Given a run's events as its appends hand them over (in several saves), ``FeedAhead`` makes exactly
the entries ``run_feed`` derives from the log, numbered 1, 2, …; after a gap in the stream's
versions (an append it never saw) it makes nothing more for that run.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from domain.run import Run
from projections.feed_ahead import FeedAhead
from projections.sse_feed import run_feed
from tests.unit.run_steps import DEADLINE, LIMITS, RUN_ID, Step
from tests.unit.test_run_outcome_table import SPEC_TABLE

OTHER_RUN = UUID("00000000-0000-4000-8000-000000000002")


def finished_run(steps: list[Step], run_id: UUID = RUN_ID) -> list[Any]:
    """Every event of a run that took ``steps`` and finished."""
    run = Run.start("session-1", "why is checkout slow?", DEADLINE, limits=LIMITS, run_id=run_id)
    for step in steps:
        step(run)
    run.finish(run.created_on + timedelta(seconds=1))
    return list(run.collect_events())


class Handed:
    """What a ``FeedAhead`` handed on, each call's rows."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, rows: list[dict[str, Any]], then: Any = None) -> None:
        self.calls.append(rows)
        if then is not None:
            then()

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [row for call in self.calls for row in call]


@pytest.mark.parametrize(
    "steps", [row[1] for row in SPEC_TABLE], ids=[row[0] for row in SPEC_TABLE]
)
def test_the_entries_made_ahead_are_the_feed_the_log_gives(steps: list[Step]) -> None:
    events = finished_run(steps)
    handed = Handed()
    ahead = FeedAhead(handed)

    for start in range(0, len(events), 3):  # saves of a few events each
        ahead.appended(events[start : start + 3])

    expected = run_feed(str(RUN_ID), events)
    assert [(row["event"], row["data"]) for row in handed.rows] == [
        (kind, data) for _, kind, data in expected
    ]
    assert [row["seq"] for row in handed.rows] == list(range(1, len(expected) + 1))
    assert {row["run_id"] for row in handed.rows} == {str(RUN_ID)}
    assert ahead.following == 0  # its feed ended: nothing is kept


def test_a_run_with_an_append_it_did_not_see_is_forgotten() -> None:
    events = finished_run(SPEC_TABLE[0][1])
    handed = Handed()
    ahead = FeedAhead(handed)

    ahead.appended(events[:2])
    seen = len(handed.rows)
    ahead.appended(events[3:])  # events[2] was appended elsewhere (another process)

    assert len(handed.rows) == seen
    assert ahead.following == 0


def test_listeners_out_of_order_forget_the_run_rather_than_misnumber() -> None:
    events = finished_run(SPEC_TABLE[0][1])
    handed = Handed()
    ahead = FeedAhead(handed)

    ahead.appended(events[:1])
    ahead.appended(events[2:3])  # a later save's listener ran first
    ahead.appended(events[1:2])

    assert [row["event"] for row in handed.rows] == ["metadata"]
    assert ahead.following == 0


def test_runs_it_never_saw_start_and_other_streams_make_nothing() -> None:
    events = finished_run(SPEC_TABLE[0][1])
    handed = Handed()
    ahead = FeedAhead(handed)

    ahead.appended(events[1:])  # started in another process

    assert handed.calls == []
    assert ahead.following == 0


def test_the_oldest_open_run_is_dropped_beyond_capacity() -> None:
    first = finished_run(SPEC_TABLE[0][1])
    second = finished_run(SPEC_TABLE[0][1], run_id=OTHER_RUN)
    handed = Handed()
    ahead = FeedAhead(handed, capacity=1)

    ahead.appended(first[:1])
    ahead.appended(second[:1])
    ahead.appended(first[1:])  # dropped: nothing more for it
    ahead.appended(second[1:])

    assert {row["run_id"] for row in handed.rows[2:]} == {str(OTHER_RUN)}
    assert handed.rows[-1]["event"] == "done"


def test_the_wake_up_goes_with_the_entries_or_is_called_at_once() -> None:
    events = finished_run(SPEC_TABLE[0][1])
    handed = Handed()
    ahead = FeedAhead(handed)
    woken: list[int] = []

    ahead.appended(events[:1], lambda: woken.append(len(handed.calls)))  # metadata: handed on
    ahead.appended([], lambda: woken.append(-1))  # nothing made: at once

    assert woken == [1, -1]
