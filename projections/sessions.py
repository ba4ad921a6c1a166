"""``session_turn``: a session's runs in order, and what each carries into the next turn.

Only the published result of a DIAGNOSIS run whose ReleaseOutcome is SUCCESS becomes a turn's
``published_result``; fallbacks, answers and failures never do (SPEC §1 PreviousTurn, §12).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select

from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import Intent
from projections.base import IN_CHUNK, Positioned, Row, RowCache, jsonable, text
from projections.tables import session_turn

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Connection


class Sessions:
    """Turns per session, numbered from 1 in the order their runs started."""

    name = "session_turn"
    tables = (session_turn,)
    interests = (Run.RunStarted, Run.RoutingDecision, Run.ReleaseDecision, Run.RunFinished)

    def process(self, connection: Connection, events: Sequence[Positioned]) -> None:
        """Add a turn per started run and fill it in as the run routes and finishes."""
        turns = RowCache(connection, session_turn, "run_id")
        turns.preload(run_id for _, e, run_id in events if not isinstance(e, Run.RunStarted))
        last_turn = _stored_last_turns(
            connection, {e.session_id for _, e, _ in events if isinstance(e, Run.RunStarted)}
        )
        for _, event, run_id in events:
            if isinstance(event, Run.RunStarted):
                session = event.session_id
                last_turn[session] += 1
                turns.add(_new_turn(event, run_id, last_turn[session]))
            else:
                row = turns.get(run_id)
                if row is not None:
                    _update(row, event)
        turns.flush()


def _stored_last_turns(connection: Connection, sessions: set[str]) -> dict[str, int]:
    """The highest stored turn of each session (0 for a new one), in a few queries."""
    found = dict.fromkeys(sessions, 0)
    wanted = sorted(sessions)
    column = session_turn.c
    for start in range(0, len(wanted), IN_CHUNK):
        query = (
            select(column.session_id, func.max(column.turn))
            .where(column.session_id.in_(wanted[start : start + IN_CHUNK]))
            .group_by(column.session_id)
        )
        found.update({session: int(turn) for session, turn in connection.execute(query)})
    return found


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
