"""ReadAhead: one fetch in flight; its rows only for the position asked, its error only then."""

from __future__ import annotations

import threading

import pytest

from projections.read_ahead import ReadAhead


def test_the_rows_fetched_for_a_position_are_taken_for_it_from_another_thread() -> None:
    threads: list[str] = []

    def fetch(after: int) -> list[int]:
        threads.append(threading.current_thread().name)
        return [after + 1, after + 2]

    ahead = ReadAhead(fetch, 2)
    assert ahead.take(0) is None  # nothing fetched yet: the caller reads itself
    ahead.start(7)
    assert ahead.take(7) == [8, 9]
    assert threads == ["projections-read-ahead"]
    assert ahead.take(7) is None  # taken once


def test_rows_fetched_for_another_position_are_dropped_and_never_returned() -> None:
    ahead = ReadAhead(lambda after: [after + 1], 2)
    ahead.start(7)
    assert ahead.take(14) is None  # another runner moved the positions: read afresh
    ahead.start(14)
    assert ahead.take(14) == [15]


def test_an_error_reaches_the_taker_only_for_the_position_it_wanted() -> None:
    def fails(after: int) -> list[int]:
        raise ConnectionError(f"the log could not be read after {after}")

    ahead = ReadAhead(fails, 2)
    ahead.start(7)
    with pytest.raises(ConnectionError, match="after 7"):
        ahead.take(7)
    ahead.start(7)
    assert ahead.take(8) is None  # not wanted: dropped with its error
    ahead.start(7)
    ahead.drop()
    assert ahead.take(7) is None


def test_starting_again_waits_for_the_fetch_in_flight_and_drops_it() -> None:
    release, order = threading.Event(), []

    def fetch(after: int) -> list[int]:
        if after == 1:
            release.wait(5)
        order.append(after)
        return [after]

    ahead = ReadAhead(fetch, 2)
    ahead.start(1)
    release.set()
    ahead.start(2)
    assert ahead.take(2) == [2]
    assert order == [1, 2]
