"""Waiting for a log position (``projections.reach.Reach``): answered by this process's batches.

The tracking rows are stood in for by a function that counts how often it is asked, with the
positions it answers; every wait is bounded, and nothing here waits on time to pass.
"""

from __future__ import annotations

import threading

from projections.reach import Reach


class Stored:
    """The tracking rows: fixed positions, and how many times they were read."""

    def __init__(self, **positions: int) -> None:
        self.positions = positions
        self.reads = 0

    def __call__(self) -> dict[str, int]:
        self.reads += 1
        return dict(self.positions)


def test_a_position_a_local_batch_reached_is_answered_without_reading_the_rows() -> None:
    stored = Stored(trace_event=0, sse_feed=0)
    reach = Reach(stored)
    reach.note(["trace_event", "sse_feed"], 42)
    assert reach.wait_for(42, 30, ["trace_event", "sse_feed"])
    assert reach.wait_for(7, 30, ["trace_event"])
    assert stored.reads == 0


def test_what_no_local_batch_reached_is_read_from_the_rows() -> None:
    stored = Stored(trace_event=50, sse_feed=9)
    reach = Reach(stored)
    reach.note(["sse_feed"], 9)
    assert reach.wait_for(40, 30, ["trace_event"])  # another process's follower got there
    assert stored.reads == 1
    assert not reach.wait_for(40, 0, ["sse_feed", "trace_event"])  # neither says so: bounded
    assert stored.reads == 2


def test_a_batch_committed_while_waiting_wakes_the_wait() -> None:
    stored = Stored(trace_event=0)
    reach = Reach(stored)
    noted = threading.Thread(target=reach.note, args=(["trace_event"], 5))

    def start_noting_then_behind() -> dict[str, int]:
        if not noted.is_alive() and stored.reads == 0:
            noted.start()  # the batch commits while the waiter reads the rows or waits
        return stored()

    reach.stored = start_noting_then_behind
    assert reach.wait_for(5, 60, ["trace_event"])
    noted.join()
    assert stored.reads == 1  # woken by the batch: the rows were not read again


def test_a_rebuild_forgets_what_the_batches_said() -> None:
    stored = Stored(trace_event=3)
    reach = Reach(stored)
    reach.note(["trace_event"], 100)
    reach.forget(["trace_event"])  # the tracking rows went back to 0
    assert not reach.wait_for(100, 0, ["trace_event"])
    assert stored.reads == 1
    reach.note(["trace_event"], 100)  # the rebuild's own batch got there again
    assert reach.wait_for(100, 0, ["trace_event"])
    assert stored.reads == 1


def test_a_projection_followed_here_is_waited_for_here_before_the_rows_are_read() -> None:
    stored = Stored(session_turn=8)
    reach = Reach(stored, look_every=60)
    reach.note(["session_turn"], 8)  # this process's follower is behind the head of 10
    threading.Thread(target=reach.note, args=(["session_turn"], 10)).start()
    assert reach.wait_for(10, 60, ["session_turn"])
    assert stored.reads == 0


def test_a_projection_followed_here_is_not_polled_in_the_rows_while_its_wait_lasts() -> None:
    stored = Stored(session_turn=8)  # nobody gets to 10 during the wait
    reach = Reach(stored, look_every=0.0001, look_followed_every=60)
    reach.note(["session_turn"], 8)
    assert not reach.wait_for(10, 0.05, ["session_turn"])
    assert stored.reads == 1  # the last word only: a busy follower's slow batch costs no polls


def test_a_wait_that_ends_before_any_batch_reads_the_rows_once() -> None:
    stored = Stored(session_turn=10)  # another process's follower got there
    reach = Reach(stored, look_every=60)
    reach.note(["session_turn"], 8)
    assert reach.wait_for(10, 0, ["session_turn"])
    assert stored.reads == 1
