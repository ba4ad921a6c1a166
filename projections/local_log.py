"""The log entries this process appended, kept as events: the followers need not read them back.

A worker's live followers apply, for the most part, the entries its own runs have just
appended: reading them back from the log and deserialising them took about a tenth of a busy
worker's interpreter samples. The store tells this cache every append it committed with its
log positions and the very events it stored, and a follower whose next position is here takes
its batch from it.

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

CAPACITY = 5_000
"""Entries kept at most, the oldest appended dropped first: the bound while a follower is stuck
(its database down, say); normally an entry is dropped once every follower has passed it."""
LARGEST = 64 * 1024
"""Entries whose stored state is larger (a big tool result) are not kept: the log has them."""

Entry = tuple[int, Any, str, str]
"""A log position, the event stored there, its stream's id as text, and its topic."""


class LocalLog:
    """This process's recent appends by log position; safe for appending and reading threads.

    Each follower joins it (:meth:`join`) and says where it stands at every :meth:`take`; entries
    every follower has passed are dropped then, so the cache holds what some follower has
    still to apply, within :data:`CAPACITY` entries of at most :data:`LARGEST` bytes each.
    """

    def __init__(self, capacity: int = CAPACITY, largest: int = LARGEST) -> None:
        """Keep up to ``capacity`` entries of at most ``largest`` stored bytes each."""
        self.capacity = capacity
        self.largest = largest
        self._entries: dict[int, Entry] = {}
        self._passed: list[int] = []
        """Per follower that joined, the last position it asked after or took."""
        self._lock = threading.Lock()
        self.taken = 0
        """Entries handed to followers so far (they were not read from the log)."""

    def __len__(self) -> int:
        """Entries held now."""
        return len(self._entries)

    def join(self) -> int:
        """A new follower's token for :meth:`take`: until it takes, nothing is dropped."""
        with self._lock:
            self._passed.append(0)
            return len(self._passed) - 1

    def recorded(self, recordings: Sequence[Any]) -> None:
        """Store listener (``HarnessStore.recorded``): remember these committed entries."""
        largest = self.largest
        added = [
            (
                r.notification.id,
                r.domain_event,
                uuid_text(r.notification.originator_id),
                r.notification.topic,
            )
            for r in recordings
            if len(r.notification.state) <= largest
        ]
        with self._lock:
            entries = self._entries
            for entry in added:
                entries[entry[0]] = entry
            while len(entries) > self.capacity:  # dicts keep insertion order: oldest first
                del entries[next(iter(entries))]

    def take(
        self, follower: int, position: int, limit: int, wanted: Callable[[str], bool]
    ) -> tuple[int, int, list[Positioned]]:
        """Up to ``limit`` entries from ``position + 1`` on, without a gap, for ``follower``.

        Returns how many there were, the last one's position, and those of them whose topic
        ``wanted`` accepts, as :data:`~projections.base.Positioned` events; ``(0, position,
        [])`` when the next position is not here. The follower has passed ``position``: once
        every follower has, the entries up to there are dropped.
        """
        events: list[Positioned] = []
        last = position
        with self._lock:
            entries = self._entries
            self._passed[follower] = position
            self._drop(min(self._passed))
            while last - position < limit and (entry := entries.get(last + 1)) is not None:
                last += 1
                if wanted(entry[3]):
                    events.append(entry[:3])
            self.taken += last - position
        return last - position, last, events

    def _drop(self, passed: int) -> None:
        """Drop the oldest entries while they are at or before ``passed`` (under the lock)."""
        entries = self._entries
        while entries and (oldest := next(iter(entries))) <= passed:
            del entries[oldest]
