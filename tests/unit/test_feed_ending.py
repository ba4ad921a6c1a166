"""The one rule of a feed's last entry: the stream ends exactly where the projection stops writing.

``ends_feed`` is what a stream checks to end; the feed projection writes nothing after a run's
last entry. Over every row of the SPEC §10 outcome table, the entry it marks as the end is the
last one written, and no earlier entry.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from api.feed import _fresh
from domain.release_states import ReleaseOutcome
from domain.run import Run
from projections.sse_feed import ends_feed, run_feed
from tests.unit.run_steps import DEADLINE, LIMITS, RUN_ID, Step
from tests.unit.test_run_outcome_table import SPEC_TABLE


@pytest.mark.parametrize(
    ("steps", "outcome"),
    [(row[1], row[3]) for row in SPEC_TABLE],
    ids=[row[0] for row in SPEC_TABLE],
)
def test_only_the_last_entry_of_a_finished_runs_feed_ends_it(
    steps: list[Step], outcome: ReleaseOutcome
) -> None:
    run = Run.start("session-1", "why is checkout slow?", DEADLINE, limits=LIMITS, run_id=RUN_ID)
    for step in steps:
        step(run)
    run.finish(run.created_on + timedelta(seconds=1))

    feed = run_feed(str(RUN_ID), run.collect_events())

    ends = [ends_feed(kind, data) for _, kind, data in feed]
    assert ends == [False] * (len(feed) - 1) + [True]
    assert feed[-1][1] == ("failure" if outcome is ReleaseOutcome.CANCELLED else "done")


def test_a_feed_still_open_has_no_ending_entry() -> None:
    run = Run.start("session-1", "why is checkout slow?", DEADLINE, limits=LIMITS, run_id=RUN_ID)

    feed = run_feed(str(RUN_ID), run.collect_events())

    assert [kind for _, kind, _ in feed] == ["metadata"]
    assert not any(ends_feed(kind, data) for _, kind, data in feed)


def test_a_stream_ends_at_an_ending_entry_it_already_sent() -> None:
    """Resumed after a ``done`` made ahead of the table: the committed one ends it, unsent."""
    rows = [
        {"seq": 6, "event": "content", "data": {"release_outcome": "SUCCESS"}},
        {"seq": 7, "event": "done", "data": {"release_outcome": "SUCCESS"}},
    ]

    assert _fresh(rows, 7) == ([], 7, True)
    assert _fresh(rows[:1], 7) == ([], 7, False)
