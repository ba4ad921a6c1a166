"""A run's replays in the log: recorded in the run's replay stream, read back from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from application.store import events_of
from application.whatif.decision import Decision
from domain.errors import ConcurrentWriteError
from domain.release_replay import ReleaseReplays, replays_id

if TYPE_CHECKING:
    from datetime import datetime
    from uuid import UUID

    from application.store import HarnessStore
    from application.whatif.replay import Replayed

ATTEMPTS = 5
"""How often a replay is recorded again after another replay of the run came first."""


@dataclass(frozen=True)
class RecordedReplay:
    """One replay of a run as the log holds it."""

    number: int
    """1 for the run's first replay, and so on."""
    replayed_at: datetime
    changes: dict[str, str]
    original: Decision
    replay: Decision
    differs: bool


def record_replay(store: HarnessStore, replayed: Replayed, now: datetime) -> int:
    """Append ``replayed`` to its run's replay stream; its number among the run's replays."""
    for _ in range(ATTEMPTS):
        stream = _stream(store, replayed.run_id) or ReleaseReplays.start(replayed.run_id)
        stream.record(
            now,
            replayed.changes,
            replayed.original.to_json(),
            replayed.replay.to_json(),
            bool(replayed.differences),
            replayed.answered_by,
        )
        try:
            store.save_events(list(stream.collect_events()))
        except ConcurrentWriteError:
            continue  # another replay of this run was recorded first: after it, then
        return stream.replays
    raise ConcurrentWriteError(replays_id(replayed.run_id), "replays kept colliding; try again")


def replays_of(store: HarnessStore, run_id: UUID) -> list[RecordedReplay]:
    """Every recorded replay of ``run_id``, oldest first (none: never replayed)."""
    found: list[RecordedReplay] = []
    for event in events_of(store, replays_id(run_id)):
        if isinstance(event, ReleaseReplays.ReleaseReplayed):
            found.append(
                RecordedReplay(
                    len(found) + 1,
                    event.replayed_at,
                    dict(event.changes),
                    Decision.from_json(event.original),
                    Decision.from_json(event.replay),
                    event.differs,
                )
            )
    return found


def _stream(store: HarnessStore, run_id: UUID) -> ReleaseReplays | None:
    stream: Any = None
    for event in events_of(store, replays_id(run_id)):
        stream = event.mutate(stream)
    return stream if isinstance(stream, ReleaseReplays) else None
