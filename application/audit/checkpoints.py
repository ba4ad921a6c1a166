"""Checkpoints of the log's stream heads: writing them, and naming the streams cut since.

A checkpoint (:mod:`domain.checkpoint`) lists the head of every stream appended to since the
previous one, read from the log itself. The store writes one after a ``RUN_FINISHED`` once
:data:`CHECKPOINT_EVERY` events have been appended since the last (one small extra transaction
every so many events, never one per run), and ``harness audit checkpoint`` writes them on
demand. Verification checks that every checkpointed head is still in the log with its link.

What a checkpoint cannot show (say so to whoever relies on it): a cut of events appended after
the last checkpoint; a cut that also removes every checkpoint after it (the checkpoint stream's
tail, whose own links then still agree); and without an audit key, a rewrite that recomputes the
checkpoints' links as well. ``harness audit export --heads``, kept apart from the database,
covers those.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from application.audit.integrity import Violation
from application.audit.records import store_links
from domain.checkpoint import CHECKPOINTS_ID, AuditCheckpoint, is_checkpoint_stream
from domain.errors import ConcurrentWriteError
from domain.run import Run

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from application.audit.records import AuditRecord
    from application.audit.replay import Stream
    from application.store import HarnessStore

Sign = Callable[[bytes], dict[str, str]]
"""What signs a checkpoint's message (:meth:`~application.audit.signatures.Signer.sign`)."""

CHECKPOINT_EVERY = 1000
"""Events appended since the last checkpoint after which a finished run writes the next one."""

WINDOW = 10_000
"""The most log entries one checkpoint reads (a long log is caught up a window at a time)."""


@dataclass(frozen=True)
class Checkpointed:
    """A checkpoint just recorded: its log position, the position it covers, its streams."""

    position: int
    upto: int
    streams: int


def last_checkpoint(store: HarnessStore) -> AuditCheckpoint | None:
    """The checkpoint stream as of its last event (one event read), or None: none yet."""
    found = store.latest_event(CHECKPOINTS_ID)
    return None if found is None else AuditCheckpoint.resume(found)


def record_checkpoint(
    store: HarnessStore, window: int = WINDOW, sign: Sign | None = None
) -> Checkpointed | None:
    """Record the heads of the streams appended to since the last checkpoint.

    Reads at most ``window`` log entries; None when nothing was appended since. With ``sign``
    (the signing key's), the checkpoint is signed.

    Raises :class:`~domain.errors.ConcurrentWriteError` when another writer recorded one first.
    """
    checkpoint = last_checkpoint(store) or AuditCheckpoint.start()
    upto, heads = checkpoint.upto, dict[str, tuple[int, str]]()
    for entry, stream, version, link in store_links(store, checkpoint.upto, window):
        upto = entry
        if not is_checkpoint_stream(stream):
            heads[stream] = (version, link or "")
    if not heads:
        return None
    checkpoint.record(upto, heads, sign)
    position = store.save_events(list(checkpoint.collect_events()))
    assert position is not None
    return Checkpointed(position, upto, len(heads))


@dataclass
class Checkpointer:
    """Records a checkpoint after a save that finished a run, once ``every`` events came since.

    ``every`` 0: never. Best effort: one that cannot be recorded (another writer recorded one
    first, the store failed) is left to a later run and never fails the save.
    """

    every: int = CHECKPOINT_EVERY
    sign: Sign | None = None
    """Signs each checkpoint (``HARNESS_AUDIT_SIGNING_KEY_FILE``'s key); None: unsigned."""
    covered: int | None = None
    """The log position the last checkpoint covers, as this process last read it."""
    _busy: threading.Lock = field(default_factory=threading.Lock)

    def after_save(self, store: HarnessStore, events: Sequence[Any], position: int) -> None:
        """Called with every successful save's events and last log position."""
        if not self.every or not any(type(e) is Run.RunFinished for e in events):
            return
        if not self._busy.acquire(blocking=False):
            return  # another thread of this process is recording one
        try:
            if self._due(store, position):
                recorded = record_checkpoint(store, sign=self.sign)
                self.covered = recorded.upto if recorded else self.covered
        except ConcurrentWriteError:  # another process recorded it: nothing is missed
            self.covered = None
        except Exception as error:  # a missed checkpoint is caught up by the next one
            self.covered = None
            logging.getLogger(__name__).warning(
                "no audit checkpoint this time (the next finished run tries again): %s: %s",
                type(error).__name__,
                error,
            )
        finally:
            self._busy.release()

    def _due(self, store: HarnessStore, position: int) -> bool:
        """Due by what this process knows, and still due once the last checkpoint is read again."""
        for fresh in (self.covered is None, True):
            if fresh:
                last = last_checkpoint(store)
                self.covered = last.upto if last else 0
            assert self.covered is not None
            if position - self.covered < self.every:
                return False
        return True


def check_checkpoints(
    checkpoints: Stream | None, streams: Mapping[str, list[AuditRecord]]
) -> tuple[list[Violation], int]:
    """Every checkpointed head not in the log as recorded, and the position last covered (0: none).

    The latest checkpoint naming a stream is the one checked: its head is the stream's latest
    known, and the chain links vouch for every version before it.
    """
    latest: dict[str, tuple[int, str, AuditRecord]] = {}
    upto = 0
    for entry in checkpoints.entries if checkpoints else []:
        event: Any = entry.event
        if isinstance(event, AuditCheckpoint.CheckpointRecorded):
            upto = max(upto, event.upto)
            for name, version in event.versions.items():
                latest[name] = (version, event.links.get(name, ""), entry.record)
    found: list[Violation] = []
    for name, (version, link, where) in latest.items():
        at = [r for r in streams.get(name, []) if r.version == version]
        if not at:
            last = max((r.version for r in streams.get(name, [])), default=0)
            why = (
                f"stream {name}: version {version}, its head at this checkpoint, is not in the"
                f" log (its last version is {last}): its tail was cut, events deleted"
            )
            found.append(Violation("checkpoint", why, where))
        elif at[0].hash != link:
            why = "its link is not the one checkpointed as its stream's head: the stream was"
            why += " rewritten"
            found.append(Violation("checkpoint", why, at[0]))
    return found, upto
