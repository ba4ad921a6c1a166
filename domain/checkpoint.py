"""The AuditCheckpoint aggregate: the log's own record of every stream's head, every so often.

A stream's chain links make an edited, dropped or reordered event show, but not a cut tail: the
events left still link up. A checkpoint records, for every stream appended to since the previous
checkpoint, its last version and chain link as of a log position; an audit then names every
stream whose checkpointed head is no longer in the log. The checkpoints are one stream of their
own, chained like every other (with an audit key, HMACs), so a checkpoint cannot be edited, nor
one before the last removed, without it showing. What stays out of reach: events appended after
the last checkpoint, and a cut that also removes the checkpoints after it (the checkpoint
stream's own tail). Keep the heads of ``harness audit export --heads`` apart for those.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import IllegalTransitionError

if TYPE_CHECKING:
    from collections.abc import Mapping

CHECKPOINTS_ID = uuid5(NAMESPACE_URL, "harness:audit-checkpoints")
"""The one checkpoint stream of a log (a fixed id: two first checkpoints conflict)."""
_CHECKPOINTS_TEXT = str(CHECKPOINTS_ID)


class AuditCheckpoint(Aggregate):
    """The log's checkpoints: stream heads as of a log position, recorded every so often."""

    class CheckpointsStarted(Aggregate.Created):
        """The log's checkpoint stream began."""

        class_version = 1

    class CheckpointRecorded(Aggregate.Event):
        """The head (last version and link) of every stream appended to up to ``upto``.

        Only the streams appended to after the previous checkpoint's ``upto`` are listed: the
        others' heads are in an earlier checkpoint still.
        """

        class_version = 1
        upto: int
        """The log position the heads were read up to."""
        versions: dict[str, int]
        """Each stream's last version at ``upto``."""
        links: dict[str, str]
        """The chain link of that version."""

        def apply(self, aggregate: AuditCheckpoint) -> None:
            """Move the covered log position on."""
            aggregate.upto = self.upto

    def __init__(self) -> None:
        """No log position covered yet."""
        self.upto = 0

    @classmethod
    def start(cls) -> AuditCheckpoint:
        """The log's checkpoint stream, before its first checkpoint (``CHECKPOINTS_STARTED``)."""
        return cls._create(cls.CheckpointsStarted, id=CHECKPOINTS_ID)

    @classmethod
    def resume(cls, last: AuditCheckpoint.Event) -> AuditCheckpoint:
        """The stream as of its last event, without reading the ones before it.

        A checkpoint needs only the previous one's ``upto`` and version, so the stream, which
        grows with the log, is never replayed to record the next.
        """
        if isinstance(last, cls.CheckpointsStarted):
            made = last.mutate(None)
            assert isinstance(made, cls)
            return made
        aggregate = cls.__new__(cls)
        aggregate.__base_init__(last.originator_id, last.originator_version, last.timestamp)
        aggregate.__init__()  # type: ignore[misc]
        last.apply(aggregate)
        return aggregate

    def record(self, upto: int, heads: Mapping[str, tuple[int, str]]) -> None:
        """Record the heads of the streams appended to up to ``upto`` (``CHECKPOINT_RECORDED``)."""
        if upto <= self.upto or not heads:
            raise IllegalTransitionError(
                self.id,
                f"checkpoint stream {self.id!r}: a checkpoint covers new events (after log"
                f" position {self.upto}), not up to {upto} with {len(heads)} stream head(s)",
            )
        self.trigger_event(
            self.CheckpointRecorded,
            upto=upto,
            versions={name: version for name, (version, _) in heads.items()},
            links={name: link for name, (_, link) in heads.items()},
        )


def is_checkpoint_stream(stream: UUID | str) -> bool:
    """Whether ``stream`` is the log's checkpoint stream."""
    return str(stream) == _CHECKPOINTS_TEXT
