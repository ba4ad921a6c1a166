"""API keys and roles: who is asking, and what they may do.

Keys come from ``HARNESS_API_KEYS`` (a JSON list of ``{"key", "name", "role"}``) and are sent as
``Authorization: Bearer <key>``. A **user** starts runs and sees and cancels only the runs of their
own sessions (another's answer 404, as if they did not exist); an **auditor** reads everything and
changes nothing; an **admin** may also rebuild projections. With no keys configured the service
serves one local user, who may do everything: so it answers only requests from this machine
(:class:`LoopbackOnly`), however it was started. Keys are compared in constant time and never
logged, stored or echoed.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.errors import problem

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from infrastructure.settings import Settings

log = logging.getLogger(__name__)

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
    settings: Settings = request.app.state.worker.settings
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


FORWARDED = (b"x-forwarded-for", b"forwarded")
"""Headers a proxy adds: a request without a peer address that carries one came from elsewhere."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def is_loopback_peer(scope: Scope) -> bool:
    """Whether a request comes from this machine: a loopback address, or a Unix socket.

    ``scope["client"]`` is the peer as the server resolved it (uvicorn puts there the address a
    trusted proxy forwards). A Unix socket has no address; a request that came through one from
    a proxy (it says whom it is forwarded for) is not this machine's.
    """
    client = scope.get("client")
    if not client:
        return not any(name in FORWARDED for name, _ in scope.get("headers", []))
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return False  # a name, not an address: nothing says it is this machine
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


class LoopbackOnly:
    """Without API keys, refuse every request from another machine with 403 (and warn once)."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app
        self.warned = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Let a loopback peer through; answer any other 403 saying what to set."""
        if scope["type"] != "http" or is_loopback_peer(scope):  # the app serves no websockets
            await self.app(scope, receive, send)
            return
        peer = scope["client"][0] if scope.get("client") else "a proxy on a Unix socket"
        if not self.warned:
            self.warned = True
            log.warning(
                "serving without API keys where other machines reach it (a request from %s was "
                "refused): set HARNESS_API_KEYS to serve them, or bind to 127.0.0.1",
                peer,
            )
        detail = (
            f"this service has no API keys, so it answers only requests from its own machine "
            f"(loopback), and {peer} is not: set HARNESS_API_KEYS on the server to serve others"
        )
        await problem(403, detail)(scope, receive, send)
