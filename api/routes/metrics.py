"""``GET /metrics``: Prometheus's text exposition, for auditors and admins."""

from __future__ import annotations

import anyio
from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, generate_latest

from api.auth import Auditor
from api.deps import WorkerDep
from api.metrics import Exposition, read_snapshot
from api.problem_docs import error_responses

router = APIRouter(tags=["system"])

EXPOSITION_DOC = {
    "description": "The metrics in the Prometheus text exposition format (version 0.0.4).",
    "content": {CONTENT_TYPE_PLAIN_0_0_4.split(";")[0]: {"schema": {"type": "string"}}},
}


@router.get(
    "/metrics",
    operation_id="get_metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: EXPOSITION_DOC, **error_responses(401, 403, 503, streaming=True)},
)
async def metrics(worker: WorkerDep, _auditor: Auditor) -> Response:
    """Runs, tools, guards, model use and projection lag from the log; refusals and open streams.

    The log-derived values are the same from every worker (read from the ``metrics``
    projection); a database outage answers 503 with Retry-After.
    """
    snapshot = await anyio.to_thread.run_sync(read_snapshot, worker.engine, worker.projector)
    body = generate_latest(Exposition(snapshot, worker.local_metrics))
    return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4)
