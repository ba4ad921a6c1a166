"""API keys and roles: who is asking, and what they may do.

Keys come from ``HARNESS_API_KEYS`` (a JSON list of ``{"key", "name", "role"}``) and are sent as
``Authorization: Bearer <key>``. A **user** starts runs and sees and cancels only the runs of their
own sessions (another's answer 404, as if they did not exist); an **auditor** reads everything and
changes nothing; an **admin** may also rebuild projections. With no keys configured the service
serves one local user (it binds to loopback only: see ``harness serve``), who may do everything.
Keys are compared in constant time and never logged, stored or echoed.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

if TYPE_CHECKING:
    from infrastructure.settings import Settings

Role = Literal["user", "auditor", "admin"]

LOCAL = "local"
"""The principal of a service without keys (loopback only)."""

bearer = HTTPBearer(
    auto_error=False,
    description="An API key from HARNESS_API_KEYS (not needed when none is configured).",
)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller."""

    name: str
    role: Role

    @property
    def reads_all(self) -> bool:
        """Auditors and admins see every run; users only their own."""
        return self.role in ("auditor", "admin")

    def owns(self, owner: str | None) -> bool:
        """Whether a run or session of ``owner`` is visible to this caller."""
        return self.reads_all or owner == self.name


class Unauthenticated(HTTPException):
    """No key, or one that is not configured."""

    def __init__(self, detail: str) -> None:
        """401 with the Bearer challenge."""
        super().__init__(401, detail, headers={"WWW-Authenticate": "Bearer"})


def authenticate(settings: Settings, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    """The principal of a request's credentials (the local one when no keys are configured)."""
    if not settings.api_keys:
        return Principal(LOCAL, "admin")
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthenticated("an API key is required: send 'Authorization: Bearer <key>'")
    offered = credentials.credentials.encode()
    found: Principal | None = None
    for entry in settings.api_keys:  # every key is compared: the time says nothing of which
        if hmac.compare_digest(offered, entry.key.get_secret_value().encode()):
            found = Principal(entry.name, entry.role)
    if found is None:
        raise Unauthenticated("the API key is not valid")
    return found


def current_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    """FastAPI dependency: the caller."""
    settings: Settings = request.app.state.services.settings
    return authenticate(settings, credentials)


Caller = Annotated[Principal, Depends(current_principal)]


def require(*roles: Role) -> Any:
    """A dependency that lets only ``roles`` through (403 for the others)."""

    def check(principal: Caller) -> Principal:
        if principal.role not in roles:
            raise HTTPException(
                403, f"the {principal.role} role may not do this (allowed: {', '.join(roles)})"
            )
        return principal

    return Depends(check)


Writer = Annotated[Principal, require("user", "admin")]
"""Starts and cancels runs: users and admins, never auditors."""
Admin = Annotated[Principal, require("admin")]
Auditor = Annotated[Principal, require("auditor", "admin")]
"""Reads the whole log: auditors and admins."""
