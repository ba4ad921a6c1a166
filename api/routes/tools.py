"""``/v1/tools``: every configured tool, its origin, annotations, admission and input schema."""

from __future__ import annotations

from fastapi import APIRouter

from api.auth import Caller
from api.deps import WorkerDep
from api.problem_docs import error_responses
from api.schemas_ops import ToolPublic, ToolsPublic

router = APIRouter(prefix="/v1/tools", tags=["tools"])


@router.get(
    "",
    operation_id="list_tools",
    summary="Tools and their admission",
    responses=error_responses(401, 503),
)
def list_tools(worker: WorkerDep, _caller: Caller) -> ToolsPublic:
    """Every tool of this worker, refused ones included: only admitted tools reach the model.

    A refused tool names why (``not annotated``, ``readOnlyHint false``, ``destructive``,
    ``name clash``, …) and, when a setting would admit it, that setting. Any role may read it.
    """
    data = [ToolPublic.of(view) for view in worker.tool_views()]
    return ToolsPublic(data=data, count=len(data))
