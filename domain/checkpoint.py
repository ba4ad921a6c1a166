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

import json
from typing import TYPE_CHECKING, Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import IllegalTransitionError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

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

        class_version = 2
        upto: int
        """The log position the heads were read up to."""
        versions: dict[str, int]
        """Each stream's last version at ``upto``."""
        links: dict[str, str]
        """The chain link of that version."""
        signature: dict[str, str] | None
        """An Ed25519 signature of :func:`checkpoint_message` (``alg``, ``key_id``, ``value``),
        when the log's writer holds a signing key; None otherwise (and before version 2)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 was never signed."""
            state["signature"] = None

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

    def record(
        self,
        upto: int,
        heads: Mapping[str, tuple[int, str]],
        sign: Callable[[bytes], dict[str, str]] | None = None,
    ) -> None:
        """Record the heads of the streams appended to up to ``upto`` (``CHECKPOINT_RECORDED``).

        With ``sign`` (a signing key's), the checkpoint carries its signature of
        :func:`checkpoint_message`: its own version, ``upto`` and every head.
        """
        if upto <= self.upto or not heads:
            raise IllegalTransitionError(
                self.id,
                f"checkpoint stream {self.id!r}: a checkpoint covers new events (after log"
                f" position {self.upto}), not up to {upto} with {len(heads)} stream head(s)",
            )
        versions = {name: version for name, (version, _) in heads.items()}
        links = {name: link for name, (_, link) in heads.items()}
        message = checkpoint_message(self.version + 1, upto, versions, links)
        self.trigger_event(
            self.CheckpointRecorded,
            upto=upto,
            versions=versions,
            links=links,
            signature=sign(message) if sign else None,
        )


def checkpoint_message(
    version: int, upto: int, versions: Mapping[str, int], links: Mapping[str, str]
) -> bytes:
    """What a checkpoint's signature covers, as canonical JSON (sorted keys, no spaces, UTF-8).

    Its version in the checkpoint stream, ``upto`` and every stream head. The version ties the
    signature to its place: a checkpoint dropped from the middle of the stream, the later ones
    renumbered and relinked, no longer matches its signature.
    """
    content = {
        "kind": "harness-audit-checkpoint",
        "version": version,
        "upto": upto,
        "heads": {name: [versions[name], links.get(name, "")] for name in versions},
    }
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def is_checkpoint_stream(stream: UUID | str) -> bool:
    """Whether ``stream`` is the log's checkpoint stream."""
    return str(stream) == _CHECKPOINTS_TEXT
