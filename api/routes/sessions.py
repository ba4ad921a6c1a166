"""``/v1/sessions``: a session's turns."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.auth import Caller
from api.deps import WorkerDep
from api.errors import no_session
from api.params import SessionId
from api.problem_docs import error_responses
from api.schemas import SessionPublic, TurnPublic
from projections.queries import session_rows

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


@router.get(
    "/{session_id}",
    operation_id="get_session",
    summary="A session",
    responses=error_responses(401, 404, 503),
)
def get_session(
    worker: WorkerDep,
    caller: Caller,
    session_id: Annotated[SessionId, Path()],
) -> SessionPublic:
    """The session's turns in order, each with what it published (the PreviousTurn policy)."""
    worker.fresh("session_turn")
    with worker.engine.connect() as connection:
        rows = session_rows(connection, session_id)
    if not rows or not caller.owns(str(rows[0]["owner"])):
        raise no_session(session_id)
    return SessionPublic(
        session_id=session_id,
        owner=str(rows[0]["owner"]),
        data=[TurnPublic.model_validate(r) for r in rows],
        count=len(rows),
    )
