"""How far the projections have applied the log: as this process saw it, else as stored.

Read-your-writes waits here: a command returns its log position, a query waits until the
projections it reads have applied it. The tracking rows say where each projection stands, but
reading them is a round trip; the batches committed in this process already say it (a
committed batch's projections are at least at its last position), so a wait that a local batch
answers costs no query. The database is looked at for projections no local batch has applied
(they are followed in another process: at once, then every :data:`LOOK_EVERY`), and, for those
followed here, only after a wait heard of no local batch for :data:`LOOK_FOLLOWED_EVERY`: a
safety net for another process moving them (a second follower, say), since under load a local
follower's batch can take longer than the short interval, and reading the rows on every such
wait took a twentieth of a busy worker's interpreter samples.

A position learned here can only be too high after the tracking rows were moved back (a
rebuild); a rebuild in this process forgets them first. One in another process makes a wait
here return while the tables are still being rebuilt, as a wait that ran out would have.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

LOOK_EVERY = 0.05
"""Seconds between two reads of the tracking rows for projections followed in another process."""
LOOK_FOLLOWED_EVERY = 1.0
"""Seconds without a local batch after which a wait for projections followed here reads the rows."""


class Reach:
    """The projections' positions known in this process, and waits for them."""

    def __init__(
        self,
        stored: Callable[[], dict[str, int]],
        look_every: float = LOOK_EVERY,
        look_followed_every: float = LOOK_FOLLOWED_EVERY,
    ) -> None:
        """``stored()`` reads every projection's position from the tracking rows."""
        self.stored = stored
        self.look_every = look_every
        self.look_followed_every = look_followed_every
        self.advanced = threading.Condition()
        """Notified after every batch committed in this process (waiters for a position)."""
        self._known: dict[str, int] = {}

    def note(self, names: Iterable[str], last: int) -> None:
        """A batch of the named projections committed up to ``last``: wake the waiters."""
        with self.advanced:
            known = self._known
            for name in names:
                if known.get(name, 0) < last:
                    known[name] = last
            self.advanced.notify_all()

    def forget(self, names: Iterable[str]) -> None:
        """The named projections were moved back (a rebuild): learn their positions anew."""
        with self.advanced:
            for name in names:
                self._known.pop(name, None)

    def wait_for(self, position: int, timeout: float, names: Sequence[str]) -> bool:
        """Block until the named projections have applied ``position``; False after ``timeout``.

        Answered by this process's batches when they can. The tracking rows are read at once
        and every :data:`LOOK_EVERY` seconds for a projection no batch of this process has
        applied yet (its follower runs elsewhere); for projections followed here, only after
        :data:`LOOK_FOLLOWED_EVERY` seconds in which no local batch was heard of; and once at
        the end of a wait that never read them.
        """
        deadline = time.monotonic() + timeout
        followed = self._followed(names)
        every = self.look_followed_every if followed else self.look_every
        look, looked = not followed, False
        while True:
            if self._reached(position, names):
                return True
            if look:
                looked = True
                if _at_least(self.stored(), position, names):
                    return True
            with self.advanced:
                if self._reached(position, names):  # a batch committed during the read
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                look = not self.advanced.wait(min(remaining, every))
        return not looked and _at_least(self.stored(), position, names)  # a last word

    def _reached(self, position: int, names: Sequence[str]) -> bool:
        return _at_least(self._known, position, names)

    def _followed(self, names: Sequence[str]) -> bool:
        """Whether batches of every named projection committed here (a follower in this process)."""
        known = self._known
        return all(name in known for name in names)


def _at_least(positions: dict[str, int], position: int, names: Sequence[str]) -> bool:
    return all(positions.get(name, 0) >= position for name in names)
