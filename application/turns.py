"""The PreviousTurn policy (SPEC §1): what a session's latest turn carries into its next run."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.store import HarnessStore


class PreviousTurns:
    """The context a session's next run starts from, read from its latest finished turn.

    Only a published DIAGNOSIS + SUCCESS result is carried (:attr:`domain.run.Run.previous_turn`);
    the latest turn is found on the read side, which is first given the chance to reach the
    log's head so that a turn that just finished is seen.
    """

    def __init__(
        self,
        store: HarnessStore,
        last_turn: Callable[[str], str | None],
        caught_up: Callable[[int], None],
    ) -> None:
        """``last_turn(session)`` names its latest run; ``caught_up(position)`` waits (bounded)."""
        self.store = store
        self.last_turn = last_turn
        self.caught_up = caught_up

    def __call__(self, session_id: str) -> str:
        """The text the session's next run is given as its previous turn ('' when none)."""
        self.caught_up(self.store.head())
        run_id = self.last_turn(session_id)
        if run_id is None:
            return ""
        return self.store.get_run(UUID(run_id)).previous_turn or ""
