"""The log entries this process appended, kept as events: the followers need not read them back.

A worker's live followers apply, for the most part, the entries its own runs have just
appended: reading them back from the log and deserialising them was about a tenth of the
worker's CPU. The store tells this cache every append it committed with its log positions and
the very events it stored, and a follower whose next position is here takes its batch from it.

Only a run of consecutive positions is handed out, from the one a follower asks for: positions
are unique, so a run without a gap is exactly what the log holds there. An entry another
process appended, or a position the log skipped (an append that failed after taking its id),
is a gap: the follower reads the log from there as it always did, and every later entry, ours
or not, comes back in order. The events handed out are the stored ones themselves; the mapper's
round trip gives equal events, so the rows are the same as a rebuild's (tests hold this for
every outcome).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from projections.base import uuid_text

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from projections.base import Positioned

CAPACITY = 20_000
"""Entries kept at most, the oldest appended dropped first (about two minutes of a busy
worker's appends; a follower further behind reads the log)."""

Entry = tuple[int, Any, str, str]
"""A log position, the event stored there, its stream's id as text, and its topic."""


class LocalLog:
    """This process's recent appends by log position; safe for appending and reading threads."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        """Keep up to ``capacity`` entries."""
        self.capacity = capacity
        self._entries: dict[int, Entry] = {}
        self._lock = threading.Lock()
        self.taken = 0
        """Entries handed to followers so far (they were not read from the log)."""

    def recorded(self, recordings: Sequence[Any]) -> None:
        """Store listener (``HarnessStore.recorded``): remember these committed entries."""
        added = [
            (r.notification.id, r.domain_event, uuid_text(r.notification.originator_id))
            for r in recordings
        ]
        topics = [r.notification.topic for r in recordings]
        with self._lock:
            entries = self._entries
            for (position, event, stream), topic in zip(added, topics, strict=True):
                entries[position] = (position, event, stream, topic)
            while len(entries) > self.capacity:  # dicts keep insertion order: oldest first
                del entries[next(iter(entries))]

    def take(
        self, position: int, limit: int, wanted: Callable[[str], bool]
    ) -> tuple[int, int, list[Positioned]]:
        """Up to ``limit`` entries from ``position + 1`` on, without a gap.

        Returns how many there were, the last one's position, and those of them whose topic
        ``wanted`` accepts, as :data:`~projections.base.Positioned` events; ``(0, position,
        [])`` when the next position is not here.
        """
        events: list[Positioned] = []
        last = position
        with self._lock:
            entries = self._entries
            while last - position < limit and (entry := entries.get(last + 1)) is not None:
                last += 1
                if wanted(entry[3]):
                    events.append(entry[:3])
            self.taken += last - position
        return last - position, last, events
