"""A run's next feed entries, made from this process's own appends: ahead of the feed's table.

A run's feed is a function of its own stream: :class:`~projections.sse_feed.SseFeed` numbers a
run's entries from its ``RunStarted`` on and reads nothing else. A process that has seen every
version of a run's stream so far (the worker executing the run appends them all) therefore knows
the run's next entries, with their numbers, the moment an append of it commits: they are the very
rows the feed follower will write once it has read the append back from the log. Handing them to
the streams at once saves the follower's round trips, and never shows an entry that the table
will not hold with the same number: the events are committed, and the follower computes the same
rows from them.

A run is forgotten as soon as one of its appends is not the next version of its stream (another
process appended to it, a cancel for example, or two threads' listeners ran out of order), when
its feed ends, and, oldest first, beyond :data:`OPEN_RUNS`; its streams then get their entries
from the follower as before.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from domain.run import Run
from projections.sse_feed import new_state, numbered

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from uuid import UUID

    from application.view_port import Row

OPEN_RUNS = 10_000
"""Runs whose feed state is kept at most (a run that never finishes here is dropped in time)."""
AHEAD = -1
"""The ``position`` of an entry made here: it has no log position yet known to this process."""


class FeedAhead:
    """Keeps the feed state of the runs this process appends to; hands on their new entries."""

    def __init__(
        self,
        deliver: Callable[[list[Row], Callable[[], object] | None], None],
        capacity: int = OPEN_RUNS,
    ) -> None:
        """Hand each append's new feed rows (in order) to ``deliver``, in the appending thread.

        ``deliver`` gets the rows and what to call once streams have them (see :meth:`appended`).
        """
        self._deliver = deliver
        self._capacity = capacity
        self._runs: dict[UUID, tuple[int, Row]] = {}
        """Each followed run's last stream version seen and its feed state (an ``sse_run`` row)."""
        self._lock = threading.Lock()

    @property
    def following(self) -> int:
        """Runs whose feed state is kept now."""
        with self._lock:
            return len(self._runs)

    def appended(self, events: Sequence[Any], then: Callable[[], object] | None = None) -> None:
        """Store listener: the feed entries of these committed events go to ``deliver``.

        ``then`` (the feed follower's wake-up, say) goes with them, or is called at once when
        the events make no entry.
        """
        with self._lock:
            rows = [row for event in events for row in self._apply(event)]
        if rows:
            self._deliver(rows, then)
        elif then is not None:
            then()

    def _apply(self, event: Any) -> list[Row]:
        """The rows ``event`` adds to its run's feed, if that run is followed; under the lock."""
        stream, version = event.originator_id, event.originator_version
        if isinstance(event, Run.RunStarted):
            state = new_state(str(stream), event.session_id)
            self._runs[stream] = (version, state)
            if len(self._runs) > self._capacity:
                del self._runs[next(iter(self._runs))]
        else:
            found = self._runs.get(stream)
            if found is None:
                return []  # not a run, or not one whose every append came by here
            if version != found[0] + 1:
                del self._runs[stream]  # a version went elsewhere: the state may be stale
                return []
            state = found[1]
            self._runs[stream] = (version, state)
        rows = numbered(state, event, AHEAD)
        if state["closed"]:
            del self._runs[stream]  # nothing follows a feed's last entry
        return rows
