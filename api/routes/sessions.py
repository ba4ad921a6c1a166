"""``/v1/sessions``: a session's turns."""

from __future__ import annotations

from fastapi import APIRouter, Path

from api.auth import Caller
from api.deps import ServicesDep
from api.errors import NotFound, error_responses
from api.schemas import SESSION_PATTERN, SessionPublic, TurnPublic
from projections.queries import session_rows

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


@router.get("/{session_id}", summary="A session", responses=error_responses(401, 404, 503))
def get_session(
    services: ServicesDep,
    caller: Caller,
    session_id: str = Path(max_length=200, pattern=SESSION_PATTERN),
) -> SessionPublic:
    """The session's turns in order, each with what it published (the PreviousTurn policy)."""
    services.fresh("session_turn")
    with services.engine.connect() as connection:
        rows = session_rows(connection, session_id)
    if not rows or not caller.owns(str(rows[0]["owner"])):
        raise NotFound(f"no session {session_id!r} exists")
    return SessionPublic(
        session_id=session_id,
        owner=str(rows[0]["owner"]),
        data=[TurnPublic.model_validate(r) for r in rows],
        count=len(rows),
    )
