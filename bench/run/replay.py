"""The bare eventsourcing floor: a run's transaction shape replayed with a plain Application."""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING

from bench.floor import StoredSize, Widget

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bench.floor import BareBench
    from bench.run.shape import Shape

Plan = tuple[tuple[tuple[int, str], ...], ...]
"""Per transaction, its events as (stream index, padding)."""


def trigger(streams: list[Widget | None], index: int, data: str) -> Widget:
    """Start stream ``index`` or add an event to it; the widget whose event is pending."""
    widget = streams[index]
    if widget is None:
        widget = streams[index] = Widget.start(data)
    else:
        widget.happen(data)
    return widget


def padded_plan(shape: Shape) -> tuple[Plan, int]:
    """Paddings that give every bare event the real event's stored state size; and the total.

    The sizes are found by a dry run in memory: the bare state size with an empty payload is
    measured per event (versions and topics differ), then the payload is padded by the
    difference (an ASCII character adds one byte of JSON). A real event smaller than an empty
    bare one (about 93 bytes) stays at that minimum, so the floor never stores less.
    """
    with closing(StoredSize()) as size:
        streams: list[Widget | None] = [None] * shape.streams
        plan: list[tuple[tuple[int, str], ...]] = []
        for tx in shape.transactions:
            events: list[tuple[int, str]] = []
            for index, real in tx:
                base = size(trigger(streams, index, "").pending_events[-1])
                events.append((index, "x" * max(0, real - base)))
            plan.append(tuple(events))
        replica: list[Widget | None] = [None] * shape.streams
        total = 0
        for tx_plan in plan:
            for index, data in tx_plan:
                total += size(trigger(replica, index, data).pending_events[-1])
    return tuple(plan), total


class Floor:
    """Replays a run's transaction shape with a bare Application, optionally reading too."""

    def __init__(self, app: BareBench, plan: Plan, *, reads: bool) -> None:
        self.app = app
        self.plan = plan
        self.with_reads = reads
        self.streams = 1 + max(index for tx in plan for index, _ in tx)

    def run(self) -> None:
        """One run's transactions: (get one stream,) trigger the events, save them together."""
        streams: list[Widget | None] = [None] * self.streams
        for tx in self.plan:
            if self.with_reads:
                self.reread(streams, tx[0][0])
            touched: dict[int, Widget] = {}
            for index, data in tx:
                widget = trigger(streams, index, data)
                touched[id(widget)] = widget
            self.app.save(*touched.values())

    @staticmethod
    def reread_index(streams: Sequence[object | None], first: int) -> int | None:
        """The stream to rebuild: the transaction's first if it exists, else 0 if that exists."""
        index = first if streams[first] is not None else 0
        return index if streams[index] is not None else None

    def reread(self, streams: list[Widget | None], first: int) -> None:
        """Rebuild one stream from its stored events and use the rebuilt aggregate."""
        index = self.reread_index(streams, first)
        existing = None if index is None else streams[index]
        if index is not None and existing is not None:
            reloaded: Widget = self.app.repository.get(existing.id)
            streams[index] = reloaded

    def reads(self) -> tuple[int, int]:
        """How many repository.get calls one run with reads makes, and how many events they read."""
        versions: list[int | None] = [None] * self.streams
        gets = events = 0
        for tx in self.plan:
            index = self.reread_index(versions, tx[0][0])
            if index is not None:
                gets += 1
                events += versions[index] or 0
            for stream, _ in tx:
                versions[stream] = (versions[stream] or 0) + 1
        return gets, events

    def close(self) -> None:
        """Release connections."""
        self.app.close()
