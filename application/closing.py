"""Closing the event store safely while runs in other threads may still be writing.

A run executes in a worker thread of its own and may outlive the service that started it (a
shutdown does not wait for a model that hangs). SQLite's driver crashes the process when a
connection is closed while another thread executes on it, so the store counts the database
transactions in progress: ``close`` refuses new ones, waits (bounded) for those running, and
only then closes the connections. A run that tries to write afterwards gets
:class:`StoreClosedError` and stops; the recovery sweep ends it later (WORKER_LOST), as for any
worker that went away.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from types import TracebackType

CLOSE_WAIT = 10.0
"""Seconds ``close`` waits for the database transactions in progress to end."""


class UseGate:
    """Counts uses in progress; once closed, refuses new ones and waits for the rest."""

    def __init__(self, refused: Callable[[], Exception]) -> None:
        """``refused`` makes the error a use after closing raises."""
        self._refused = refused
        self._changed = threading.Condition()
        self._active = 0
        self._closed = False

    def use(self) -> UseGate:
        """One use (``with gate.use():``); raises ``refused()`` once the gate is closed.

        The gate is its own context manager: a use keeps no state but the count, and every
        database transaction is one, so a generator-based manager would cost more than the rest.
        """
        return self

    def __enter__(self) -> None:
        """Begin a use, unless closed."""
        with self._changed:
            if self._closed:
                raise self._refused()
            self._active += 1

    def __exit__(self, *_: object) -> None:
        """End a use (whatever ended it: never suppresses an exception)."""
        with self._changed:
            self._active -= 1
            self._changed.notify_all()

    def close(self, timeout: float = CLOSE_WAIT) -> bool:
        """Refuse new uses and wait for those in progress; whether they all ended in time."""
        with self._changed:
            self._closed = True
            return self._changed.wait_for(lambda: self._active == 0, timeout)


def gate_transactions(datastore: Any, gate: UseGate) -> None:
    """Make every transaction and connection of an eventsourcing datastore a use of ``gate``."""
    for name in ("transaction", "get_connection"):  # SQLite uses the first, PostgreSQL both
        original = getattr(datastore, name, None)
        if original is not None:
            setattr(datastore, name, _gated(original, gate))


def _gated(original: Callable[..., Any], gate: UseGate) -> Callable[..., Any]:
    def opened(*args: Any, **kwargs: Any) -> _GatedUse:
        return _GatedUse(gate, original, args, kwargs)

    return opened


class _GatedUse:
    """``with gate.use(), original(*args, **kwargs) as handle``, as one context manager object."""

    __slots__ = ("_args", "_gate", "_kwargs", "_opened", "_original")

    def __init__(
        self,
        gate: UseGate,
        original: Callable[..., AbstractContextManager[Any]],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self._gate = gate
        self._original, self._args, self._kwargs = original, args, kwargs
        self._opened: AbstractContextManager[Any] | None = None

    def __enter__(self) -> Any:
        self._gate.__enter__()  # refused once closed, before the datastore is touched
        try:
            self._opened = self._original(*self._args, **self._kwargs)
            return self._opened.__enter__()
        except BaseException:
            self._gate.__exit__()
            raise

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        try:
            assert self._opened is not None
            return self._opened.__exit__(kind, error, traceback)
        finally:
            self._gate.__exit__()
