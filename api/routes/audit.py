"""The log itself, for auditors: every domain event in log order, paged."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.auth import Auditor
from api.deps import WorkerDep
from api.errors import error_responses
from api.schemas import AuditEventPublic, AuditEventsPublic
from application.audit.records import store_records

router = APIRouter(prefix="/v1/audit", tags=["audit"])

MAX_PAGE = 1000
MAX_POSITION = 2**63 - 1
"""The largest log position a database stores (a signed 64-bit integer)."""


@router.get("/events", summary="Audit events", responses=error_responses(401, 403, 503))
def events(
    worker: WorkerDep,
    _auditor: Auditor,
    after: Annotated[
        int, Query(ge=0, le=MAX_POSITION, description="Only events after this log position.")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Events per page.")] = 500,
) -> AuditEventsPublic:
    """Every domain event after ``after``, in log order, with its chain link (auditors, admins).

    The same records as `harness audit export --all`; save the pages as JSON Lines to verify
    them offline with `harness audit verify`.
    """
    head = worker.store.head()
    page = [
        AuditEventPublic.model_validate(record.to_json())
        for record in store_records(worker.store, after, limit)
    ]
    return AuditEventsPublic(
        data=page,
        count=len(page),
        next_after=page[-1].position if page else after,
        head=max(head, page[-1].position if page else 0),
    )
