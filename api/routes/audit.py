"""The log itself, for auditors: every domain event in log order, paged; and its verification."""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import APIRouter, HTTPException, Query

from api.audit_verify import VERIFYING, verify_database
from api.auth import Auditor
from api.deps import WorkerDep
from api.problem_docs import error_responses
from api.schemas_ops import AuditEventPublic, AuditEventsPublic, VerifyPublic
from application.audit.records import UnreadableEntry, store_records
from application.audit.verify import Signed
from infrastructure.audit_keys import configured_signer

router = APIRouter(prefix="/v1/audit", tags=["audit"])

MAX_PAGE = 1000
MAX_POSITION = 2**63 - 1
"""The largest log position a database stores (a signed 64-bit integer)."""


@router.get(
    "/events",
    operation_id="export_audit_events",
    summary="Audit events",
    responses=error_responses(401, 403, 409, 503),
)
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
    them offline with `harness audit verify`. A page holding an entry whose stored state is not
    an event (changed outside the harness) is refused with 409 naming it; `POST
    /v1/audit/verify` reports it with whatever else is wrong.
    """
    head = worker.store.head()
    try:
        page = [
            AuditEventPublic.model_validate(record.to_json())
            for record in store_records(worker.store, after, limit)
        ]
    except UnreadableEntry as error:
        raise HTTPException(409, str(error)) from None
    return AuditEventsPublic(
        data=page,
        count=len(page),
        next_after=page[-1].position if page else after,
        head=max(head, page[-1].position if page else 0),
    )


@router.post(
    "/verify",
    operation_id="verify_audit_log",
    summary="Verify the log and the read tables",
    responses=error_responses(401, 403, 409, 503),
)
async def verify(worker: WorkerDep, _auditor: Auditor) -> VerifyPublic:
    """What `harness audit verify --db` checks and reports, as JSON (auditors, admins).

    With a signing key configured, the checkpoints' signatures are checked with its public key
    too. It reads the whole log and rebuilds every projection in a temporary file to compare the
    read tables with: it takes time in proportion to the log, so one runs at a time per worker
    process and another request meanwhile is refused with 409. Compare a quiet database: rows
    of runs in flight change while they are compared.
    """
    if not VERIFYING.acquire(blocking=False):
        raise HTTPException(
            409,
            "an audit verification is already running on this worker (it reads the whole log):"
            " retry when it has finished",
        )
    try:
        settings = worker.settings
        key = settings.audit_key.get_secret_value().encode() or None
        signer = configured_signer(settings.audit_signing_key_file)  # its own, by its public key
        signed = Signed(signer.public_keys()) if signer else None
        report = await anyio.to_thread.run_sync(
            verify_database, worker.store, worker.engine, key, None, signed
        )
    finally:
        VERIFYING.release()
    return VerifyPublic.model_validate(
        {"source": "the configured database", "summary": report.summary(), **report.to_json()}
    )
