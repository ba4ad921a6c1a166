"""The cache of this process's appends hands out only runs of positions without a gap."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from uuid import UUID, uuid4

from projections.local_log import LocalLog

STREAM = uuid4()


def recording(
    position: int, topic: str = "run:Event", stream: UUID = STREAM, size: int = 100
) -> Any:
    """What the store's ``recorded`` listeners are given for one stored event."""
    event = SimpleNamespace(originator_id=stream, position=position)
    notification = SimpleNamespace(
        id=position, topic=topic, originator_id=stream, state=b"x" * size
    )
    return SimpleNamespace(domain_event=event, notification=notification)


def every(_topic: str) -> bool:
    return True


def test_consecutive_positions_are_handed_out_in_order_up_to_the_limit() -> None:
    local = LocalLog()
    me = local.join()
    local.recorded([recording(p) for p in (1, 2, 3, 4)])
    read, last, events = local.take(me, 0, 3, every)
    assert (read, last) == (3, 3)
    assert [(p, e.position, s) for p, e, s in events] == [(p, p, str(STREAM)) for p in (1, 2, 3)]
    assert local.take(me, 3, 10, every)[:2] == (1, 4)
    assert local.take(me, 4, 10, every) == (0, 4, [])
    assert local.taken == 4


def test_a_gap_ends_the_run_and_a_missing_next_position_gives_nothing() -> None:
    local = LocalLog()
    me = local.join()
    local.recorded([recording(p) for p in (1, 2, 4, 5)])  # 3: another process's, or a hole
    assert local.take(me, 0, 10, every)[:2] == (2, 2)
    assert local.take(me, 2, 10, every) == (0, 2, [])
    assert local.take(me, 3, 10, every)[:2] == (2, 5)


def test_saves_heard_out_of_order_join_up() -> None:
    local = LocalLog()
    me = local.join()
    local.recorded([recording(3), recording(4)])  # a later save's listener ran first
    assert local.take(me, 0, 10, every)[0] == 0
    local.recorded([recording(1), recording(2)])
    assert local.take(me, 0, 10, every)[:2] == (4, 4)


def test_unwanted_entries_move_the_position_without_being_handed_out() -> None:
    local = LocalLog()
    me = local.join()
    local.recorded([recording(1, "a"), recording(2, "b"), recording(3, "a")])
    read, last, events = local.take(me, 0, 10, lambda topic: topic == "a")
    assert (read, last, [p for p, _, _ in events]) == (3, 3, [1, 3])


def test_beyond_its_capacity_the_oldest_appends_are_dropped() -> None:
    local = LocalLog(capacity=3)
    me = local.join()
    local.recorded([recording(p) for p in (1, 2, 3, 4, 5)])
    assert local.take(me, 0, 10, every)[0] == 0  # 1 and 2 are gone: the log has them
    assert local.take(me, 2, 10, every)[:2] == (3, 5)


def test_entries_every_follower_passed_are_dropped_and_only_then() -> None:
    local = LocalLog()
    feed, rest = local.join(), local.join()
    local.recorded([recording(p) for p in (1, 2, 3, 4)])
    assert local.take(feed, 0, 10, every)[:2] == (4, 4)
    assert local.take(feed, 4, 10, every)[0] == 0
    assert len(local) == 4  # the other follower has not passed them
    assert local.take(rest, 0, 2, every)[:2] == (2, 2)
    assert local.take(rest, 2, 10, every)[:2] == (2, 4)  # both passed 2: 1 and 2 are dropped
    assert len(local) == 2
    assert local.take(rest, 4, 10, every)[0] == 0  # both passed 4
    assert len(local) == 0


def test_a_large_entry_is_left_to_the_log() -> None:
    local = LocalLog(largest=1000)
    me = local.join()
    local.recorded([recording(1), recording(2, size=1001), recording(3)])
    assert local.take(me, 0, 10, every)[:2] == (1, 1)
    assert local.take(me, 1, 10, every)[0] == 0  # the follower reads 2 from the log
    assert local.take(me, 2, 10, every)[:2] == (1, 3)
