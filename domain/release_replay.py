"""The ReleaseReplays aggregate: what-if re-releases of one recorded run, kept beside it.

``harness audit replay`` runs a finished diagnosis's release again over its recorded drafts and
evidence (other excerpt rules, another judge) and records what it found here: one stream per
replayed run, at an id derived from the run's, so the run's own stream is never touched and its
replays are found without an index. ``RELEASE_REPLAYS_STARTED`` names the run;
each ``RELEASE_REPLAYED`` holds what was changed, the original decision and the replay's, each
as a summary (outcome, fallback type, each statement's fate, the content's digest). Not part of
any run's timeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import InvalidCommandError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

_REPLAYS = uuid5(NAMESPACE_URL, "harness:release-replays")

MAX_CHANGES = 16
"""The most settings one replay may change."""
MAX_CHANGE_CHARS = 200
"""The longest name or value of a change recorded."""


def replays_id(run_id: UUID) -> UUID:
    """The id of ``run_id``'s replay stream (the same in every log: found without an index)."""
    return uuid5(_REPLAYS, str(run_id))


class ReleaseReplays(Aggregate):
    """The what-if re-releases of one run, in the order they were made."""

    class ReleaseReplaysStarted(Aggregate.Created):
        """The first replay of ``run_id`` began its stream."""

        class_version = 1
        run_id: UUID

        def apply(self, aggregate: ReleaseReplays) -> None:
            """Name the run replayed."""
            aggregate.run_id = self.run_id

    class ReleaseReplayed(Aggregate.Event):
        """One re-release: what it changed, the decision recorded and the one it came to."""

        class_version = 1
        replayed_at: datetime
        changes: dict[str, str]
        """What differed from the recording (``excerpt_min_words``, ``judge``, …): its value."""
        original: dict[str, Any]
        """The recorded decision, summarised (:class:`application.whatif.decision.Decision`)."""
        replay: dict[str, Any]
        """The replay's decision, summarised the same way."""
        differs: bool
        """Whether the outcome, fallback type, a statement's fate or the content changed."""
        answered_by: dict[str, str]
        """Who answered the replay's model calls: ``repair`` / ``judge`` → ``recorded answer``,
        ``recorded verdicts`` (statement by statement), ``none recorded``, ``asked MODEL``."""

        def apply(self, aggregate: ReleaseReplays) -> None:
            """Count the replay."""
            aggregate.replays += 1

    def __init__(self) -> None:
        """Fields are assigned by the events' ``apply`` methods."""
        self.run_id: UUID
        self.replays = 0

    @classmethod
    def start(cls, run_id: UUID) -> ReleaseReplays:
        """The replay stream of ``run_id``, before its first replay."""
        return cls._create(cls.ReleaseReplaysStarted, id=replays_id(run_id), run_id=run_id)

    def record(
        self,
        replayed_at: datetime,
        changes: Mapping[str, str],
        original: Mapping[str, Any],
        replay: Mapping[str, Any],
        differs: bool,
        answered_by: Mapping[str, str],
    ) -> None:
        """Record one re-release (``RELEASE_REPLAYED``); bad values are refused, nothing kept."""
        if replayed_at.tzinfo is None:
            raise InvalidCommandError(self.id, "replayed_at must carry a time zone")
        if max(len(changes), len(answered_by)) > MAX_CHANGES:
            raise InvalidCommandError(self.id, f"at most {MAX_CHANGES} changes per replay")
        for name, value in (*changes.items(), *answered_by.items()):
            if max(len(name), len(value)) > MAX_CHANGE_CHARS:
                raise InvalidCommandError(self.id, f"change {name[:40]!r} is too long")
        self.trigger_event(
            self.ReleaseReplayed,
            replayed_at=replayed_at,
            changes=dict(changes),
            original=dict(original),
            replay=dict(replay),
            differs=differs,
            answered_by=dict(answered_by),
        )
