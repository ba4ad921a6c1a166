"""Fewer garbage collections while a catch-up holds whole batches of events in memory.

A batch keeps a few thousand decoded events, their rows and the row caches alive until it
commits. With the interpreter's default thresholds (a young collection every 700 new container
objects), those survivors are traversed again and again and promoted until full collections of
the whole process follow; on a rebuild that was about a sixth of its time, work the same reading
alone (which drops every event at once) never does. Raising the youngest threshold for the
duration makes the collections rare and cheap; nothing is disabled, cycles are still collected.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

YOUNG_THRESHOLD = 50_000
"""New container objects between young collections during a catch-up (the default is 700)."""

_lock = threading.Lock()
_users = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the youngest generation's threshold for the block; nested and threaded use is safe.

    The thresholds are the process's own: the first block to enter saves them and the last to
    leave puts them back, so concurrent rebuilds (a CLI thread, an API request) never restore
    a value another one set.
    """
    global _users, _saved
    with _lock:
        if _users == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(max(YOUNG_THRESHOLD, _saved[0]), *_saved[1:])
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
