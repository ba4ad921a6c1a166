"""CommitBehind: one work in flight; its error and its follow-up reach the thread that waits."""

from __future__ import annotations

import threading

import pytest

from projections.commit_behind import CommitBehind


def test_the_follow_up_runs_in_the_waiting_thread_once_the_work_is_done() -> None:
    done, seen = threading.Event(), []
    tail = CommitBehind()
    tail.start(done.set, lambda: seen.append((done.is_set(), threading.current_thread())))
    assert seen == []  # not before the waiter asks
    tail.wait()
    assert seen == [(True, threading.current_thread())]
    tail.wait()  # nothing in flight: nothing again
    assert len(seen) == 1


def test_an_error_is_raised_to_the_waiter_and_the_follow_up_never_runs() -> None:
    seen: list[str] = []

    def fails() -> None:
        raise ValueError("the batch's end failed")

    tail = CommitBehind()
    tail.start(fails, lambda: seen.append("then"))
    with pytest.raises(ValueError, match="batch's end failed"):
        tail.wait()
    assert seen == []
    tail.wait()  # the error is raised once


def test_starting_more_waits_for_the_work_in_flight_first() -> None:
    order: list[str] = []
    release = threading.Event()
    tail = CommitBehind()

    def first() -> None:
        release.wait(5)
        order.append("first")

    tail.start(first, lambda: order.append("told"))
    release.set()
    tail.start(lambda: order.append("second"))
    tail.wait()
    assert order == ["first", "told", "second"]
