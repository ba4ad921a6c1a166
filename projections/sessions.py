"""``session_turn``: a session's runs in order, and what each carries into the next turn.

Only the published result of a DIAGNOSIS run whose ReleaseOutcome is SUCCESS becomes a turn's
``published_result``; fallbacks, answers and failures never do (SPEC §1 PreviousTurn, §12).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.view_port import jsonable
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import Intent
from projections.base import Positioned, Written, begun_before, text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.view_port import Row, ViewWriter


class Sessions:
    """Turns per session, numbered from 1 in the order their runs started."""

    name = "session_turn"
    tables = ("session_turn",)
    interests = (Run.RunStarted, Run.RoutingDecision, Run.ReleaseDecision, Run.RunFinished)

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        """Add a turn per started run and fill it in as the run routes and finishes."""
        turns = view.rows("session_turn", "run_id")
        turns.preload(begun_before(events, Run.Event, Run.RunStarted))
        sessions = {e.session_id for _, e, _ in events if isinstance(e, Run.RunStarted)}
        last_turn = dict.fromkeys(sessions, 0)  # a new session's first turn is 1
        stored = view.maxima("session_turn", "turn", "session_id", sessions)
        last_turn.update({session: int(turn) for session, turn in stored.items()})
        for _, event, run_id in events:
            if isinstance(event, Run.RunStarted):
                session = event.session_id
                last_turn[session] += 1
                turns.add(_new_turn(event, run_id, last_turn[session]))
            else:
                row = turns.get(run_id)
                if row is not None:
                    _update(row, event)
        return Written(turns.flush())


def _new_turn(event: Run.RunStarted, run_id: str, turn: int) -> Row:
    return {
        "run_id": run_id,
        "session_id": event.session_id,
        "owner": event.owner,
        "turn": turn,
        "query": event.query,
        "intent": None,
        "release_outcome": None,
        "published_result": None,
        "release_content": None,
        "created_at": event.timestamp,
        "finished_at": None,
    }


def _update(row: Row, event: Run.Event) -> None:
    match event:
        case Run.RoutingDecision():
            row["intent"] = text(event.intent)
        case Run.ReleaseDecision():
            row["release_content"] = jsonable(event.content)
        case Run.RunFinished():
            outcome = event.release_outcome
            row["release_outcome"] = outcome.value
            row["finished_at"] = event.timestamp
            diagnosed = row["intent"] == Intent.DIAGNOSIS.value
            row["published_result"] = (
                row["release_content"] if diagnosed and outcome is ReleaseOutcome.SUCCESS else None
            )
            row["release_content"] = None  # only kept while the run is open
        case _:
            pass
