"""Health, readiness, the projections' positions (admins may rebuild them), the workers."""

from __future__ import annotations

import logging
from typing import Annotated, Literal

import anyio
from fastapi import APIRouter, HTTPException, Query, Request

from api.auth import Admin, Auditor, Caller
from api.deps import WorkerDep
from api.errors import RETRY_AFTER, first_line
from api.problem_docs import error_responses
from api.schemas_ops import (
    HealthPublic,
    LeasePublic,
    ProjectionPublic,
    ProjectionsPublic,
    ReadinessPublic,
    RebuildPublic,
    WorkersPublic,
)
from application.ports import StoreError
from infrastructure.leases import SqlLeases

log = logging.getLogger(__name__)

router = APIRouter(tags=["system"])

ProjectionName = Literal[
    "diagnosis_run", "trace_event", "sse_feed", "session_turn", "metrics", "analytics", "eval_run"
]
"""The projections (``projections.runner.all_projections``), for the document."""


@router.get("/healthz", operation_id="check_liveness", summary="Liveness")
def healthz() -> HealthPublic:
    """The process is alive."""
    return HealthPublic(status="ok")


@router.get(
    "/readyz", operation_id="check_readiness", summary="Readiness", responses=error_responses(503)
)
def readyz(request: Request) -> ReadinessPublic:
    """The event store answers and this worker's lease is renewed; else 503 with Retry-After."""
    worker = request.app.state.worker
    try:
        head = worker.store.head()
    except StoreError as error:  # answered to anyone: the reason (SQL, names) goes to the log
        log.warning("not ready: the event store is unavailable: %s", first_line(error))
        raise HTTPException(
            status_code=503,
            detail=f"the event store is unavailable ({type(error).__name__}); retry shortly",
            headers={"Retry-After": RETRY_AFTER},
        ) from error
    unsure = worker.dispatcher.unsure
    why = unsure() if unsure else None
    if why is not None:  # runs started here could be swept as a lost worker's
        raise HTTPException(
            status_code=503, detail=f"not ready: {why}", headers={"Retry-After": RETRY_AFTER}
        )
    return ReadinessPublic(status="ready", backend=worker.settings.database.kind, head=head)


@router.get(
    "/v1/projections",
    operation_id="get_projections",
    summary="Projection lag",
    responses=error_responses(401, 503),
)
def projections(worker: WorkerDep, _caller: Caller) -> ProjectionsPublic:
    """Each projection's position against the log's head."""
    found = worker.projector.status()
    head = found[0].head if found else worker.store.head()
    return ProjectionsPublic(
        head=head,
        data=[
            ProjectionPublic(name=s.name, position=s.position, head=s.head, lag=s.lag)
            for s in found
        ],
    )


@router.post(
    "/v1/projections/rebuild",
    operation_id="rebuild_projections",
    summary="Rebuild projections",
    responses=error_responses(401, 403, 503),
)
async def rebuild(
    worker: WorkerDep,
    _admin: Admin,
    name: Annotated[
        list[ProjectionName] | None, Query(description="Projections to rebuild (all: omit).")
    ] = None,
) -> RebuildPublic:
    """Empty the named projections and apply the log again from position 0 (admins only)."""
    projector = worker.projector
    chosen = list(dict.fromkeys(name)) if name else list(projector.names)
    entries = await anyio.to_thread.run_sync(projector.rebuild, chosen)
    return RebuildPublic(names=chosen, entries=entries)


@router.get(
    "/v1/workers",
    operation_id="list_workers",
    summary="Workers and their leases",
    responses=error_responses(401, 403, 503),
)
def workers(worker: WorkerDep, _auditor: Auditor) -> WorkersPublic:
    """Every worker process's lease: when it last beat, until when it holds, and its state.

    LIVE: it beats; EXPIRED: it stopped beating (recovery ends its unfinished runs); DEAD: its
    process is proved gone. Expired leases are pruned by recovery. Auditors and admins only.
    """
    now, rows = SqlLeases(worker.engine).listing()
    data = [LeasePublic.model_validate(row) for row in rows]
    return WorkersPublic(now=now, data=data, count=len(data))
