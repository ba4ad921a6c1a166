"""``session_turn``: a session's runs in order, and what each carries into the next turn.

Only the published result of a DIAGNOSIS run whose ReleaseOutcome is SUCCESS becomes a turn's
``published_result``; fallbacks, answers and failures never do (SPEC §1 PreviousTurn, §12).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select

from domain.run import Run
from domain.states import Intent, ReleaseOutcome
from infrastructure.read_tables import session_turn
from projections.base import Positioned, Row, RowCache, jsonable, text, uuid_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Connection


class Sessions:
    """Turns per session, numbered from 1 in the order their runs started."""

    name = "session_turn"
    tables = (session_turn,)

    def process(self, connection: Connection, events: Sequence[Positioned]) -> None:
        """Add a turn per started run and fill it in as the run routes and finishes."""
        turns = RowCache(connection, session_turn, "run_id")
        turns.preload(uuid_text(e.originator_id) for _, e in events if isinstance(e, Run.Event))
        last_turn: dict[str, int] = {}
        for _, event in events:
            if isinstance(event, Run.RunStarted):
                session = event.session_id
                if session not in last_turn:
                    last_turn[session] = _stored_last_turn(connection, session)
                last_turn[session] += 1
                turns.add(_new_turn(event, last_turn[session]))
            elif isinstance(event, Run.Event):
                row = turns.get(uuid_text(event.originator_id))
                if row is not None:
                    _update(row, event)
        turns.flush()


def _stored_last_turn(connection: Connection, session_id: str) -> int:
    found = connection.scalar(
        select(func.max(session_turn.c.turn)).where(session_turn.c.session_id == session_id)
    )
    return int(found or 0)


def _new_turn(event: Run.RunStarted, turn: int) -> Row:
    return {
        "run_id": uuid_text(event.originator_id),
        "session_id": event.session_id,
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
        case _:
            pass
