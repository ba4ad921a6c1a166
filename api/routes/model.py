"""The configured model provider, probed on demand: what ``harness model check`` prints."""

from __future__ import annotations

from fastapi import APIRouter

from api.auth import Admin
from api.deps import WorkerDep
from api.problem_docs import error_responses
from api.schemas_ops import CapabilityPublic, ModelCheckPublic
from infrastructure.model_check import Capability, check_configured

router = APIRouter(prefix="/v1/model", tags=["model"])


@router.get(
    "/check",
    operation_id="check_model",
    summary="Probe the model provider",
    responses=error_responses(401, 403),
)
def check(worker: WorkerDep, _admin: Admin) -> ModelCheckPublic:
    """Probe the configured provider now, one entry per capability (admins only).

    Reachable, model known, strict structured output for each schema the harness sends, tool
    calling, and a small call's latency; the calls go to the model (they cost tokens), so this
    is asked for, never polled. An in-process model (offline, scripted) has nothing to check.
    """
    settings = worker.settings
    try:
        found = check_configured(settings)
    except ValueError as error:  # a configuration the provider refuses: the first capability
        found = [Capability("configured", False, str(error))]
    data = [CapabilityPublic(name=c.name, passed=c.passed, detail=c.detail) for c in found or ()]
    return ModelCheckPublic(
        model=settings.model,
        checked=found is not None,
        passed=all(c.passed for c in data),
        data=data,
        count=len(data),
    )
