"""Deciding again after losing a write race: the one retry loop of the optimistic writes.

A command that appends is decided on the streams as read; when another writer appended to one
of them first, the save raises :class:`ConcurrentWriteError` and nothing of it is stored. The
command is then decided again on the latest streams, a bounded number of times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from application.ports import StoreUnavailableError
from domain.errors import ConcurrentWriteError

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")

MAX_CONFLICT_RETRIES = 50
"""How often a command is decided again after losing a write race before giving up."""


def _decide_again(conflict: ConcurrentWriteError) -> None:
    """The default reaction to a conflict: nothing to do before the next attempt."""


def retry_on_conflict(
    attempt: Callable[[], T],
    *,
    giving_up: str,
    on_conflict: Callable[[ConcurrentWriteError], None] = _decide_again,
) -> T:
    """``attempt()`` until it does not conflict, at most :data:`MAX_CONFLICT_RETRIES` times.

    Args:
        attempt: Decides on the latest streams and saves; raises :class:`ConcurrentWriteError`
            when another writer appended first.
        giving_up: The message of the :class:`StoreUnavailableError` raised when every attempt
            conflicted.
        on_conflict: Called with each conflict before the next attempt (to reload, to count);
            it raises the conflict again when this one must not be retried.

    Returns:
        What the first attempt that did not conflict returned.
    """
    for _ in range(MAX_CONFLICT_RETRIES):
        try:
            return attempt()
        except ConcurrentWriteError as conflict:
            on_conflict(conflict)
    raise StoreUnavailableError(giving_up)
