"""The Session aggregate: who a conversation belongs to, claimed by its first run.

A session id is chosen by the client, so two callers could pick the same one. The first run of a
session claims it for its owner in the same transaction as its ``RUN_STARTED``; the claim's id is
derived from the session id, so a second claim of the same session conflicts in the event store
and loses. Later runs of the session must have the same owner.
"""

from __future__ import annotations

from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import InvalidCommandError, SessionNotYoursError

_SESSION_NAMESPACE = uuid5(NAMESPACE_URL, "diagnosis-harness:session")


def session_key(session_id: str) -> UUID:
    """The one claim id of a session id."""
    return uuid5(_SESSION_NAMESPACE, session_id)


class Session(Aggregate):
    """A conversation and its owner."""

    class SessionClaimed(Aggregate.Created):
        """The session's first run claimed it for its owner."""

        class_version = 1
        session_id: str
        owner: str

        def apply(self, aggregate: Session) -> None:
            """Record the session id and its owner."""
            aggregate.session_id = self.session_id
            aggregate.owner = self.owner

    def __init__(self) -> None:
        """Fields are assigned by ``SESSION_CLAIMED``."""
        self.session_id = ""
        self.owner = ""

    @classmethod
    def claim(cls, session_id: str, owner: str) -> Session:
        """Claim a new session for ``owner``."""
        key = session_key(session_id)
        if not session_id.strip() or not owner.strip():
            raise InvalidCommandError(key, f"session {key!r}: a session id and an owner are needed")
        return cls._create(cls.SessionClaimed, id=key, session_id=session_id, owner=owner)

    def check_owner(self, owner: str) -> None:
        """Refuse a run of another owner in this session."""
        if owner != self.owner:
            raise SessionNotYoursError(
                self.id, f"session {self.session_id!r} belongs to someone else: use another id"
            )
