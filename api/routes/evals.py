"""``/v1/evals``: the evaluations ``harness eval`` recorded, per model, and each one's cases."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID  # noqa: TC003 (FastAPI reads it)

from fastapi import APIRouter, Query
from pydantic import StringConstraints

from api.auth import Caller
from api.deps import WorkerDep
from api.errors import NotFound
from api.problem_docs import error_responses
from api.schemas_evals import EvalCasePublic, EvalPublic, EvalRunPublic, EvalsPublic
from domain.eval_run import MAX_NAME
from projections.eval_queries import eval_case_rows, eval_history, eval_row

router = APIRouter(prefix="/v1/evals", tags=["evals"])

MAX_PAGE = 200
MAX_OFFSET = 2**31 - 1
ModelName = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_NAME, pattern=r"^[^\x00-\x1f\x7f]+$")
]
"""A model's name as evaluations record it: one printable line."""


@router.get(
    "", operation_id="list_evals", summary="Eval history", responses=error_responses(401, 503)
)
def list_evals(
    worker: WorkerDep,
    _caller: Caller,
    model: Annotated[ModelName | None, Query(description="Only this model's evaluations.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> EvalsPublic:
    """Recorded evaluations, newest first (by start), each with its model, settings and totals.

    An evaluation holds no user's data (its questions come from a suite), so any role may read
    the history.
    """
    worker.fresh("eval_run")
    with worker.engine.connect() as connection:
        rows, count = eval_history(connection, model, limit, offset)
    data = [EvalRunPublic.model_validate(row) for row in rows]
    return EvalsPublic(data=data, count=count, limit=limit, offset=offset)


@router.get(
    "/{eval_id}",
    operation_id="get_eval",
    summary="One evaluation",
    responses=error_responses(401, 404, 503),
)
def get_eval(eval_id: UUID, worker: WorkerDep, _caller: Caller) -> EvalPublic:
    """An evaluation's totals and every case: its verdict, reasons, run state and usage."""
    worker.fresh("eval_run")
    with worker.engine.connect() as connection:
        row = eval_row(connection, str(eval_id))
        cases = eval_case_rows(connection, str(eval_id)) if row else []
    if row is None:
        raise NotFound(f"no evaluation {eval_id} is recorded (list them at /v1/evals)")
    data = [EvalCasePublic.model_validate(case) for case in cases]
    return EvalPublic.model_validate({**row, "data": data})
