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
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

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


FORWARDED = (b"x-forwarded-for", b"forwarded", b"x-real-ip")
"""Headers a proxy adds naming whom it forwards for (uvicorn itself resolves only the first)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a host name: it may resolve to anything
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def foreign_peer(scope: Scope) -> str | None:
    """Who a request comes from when that is not this machine; None when it is.

    ``scope["client"]`` is the peer as the server resolved it (uvicorn puts there the address a
    trusted proxy forwards in ``X-Forwarded-For``). A proxy on this machine may say whom it
    forwards for in other words (``Forwarded``, ``X-Real-IP``) that uvicorn does not read: every
    address a loopback peer's request names so must be loopback too. A Unix socket has no
    address; a request that came through one from a proxy (it names anyone) is not this
    machine's.
    """
    client = scope.get("client")
    headers = scope.get("headers", [])
    if not client:
        named = any(name in FORWARDED for name, _ in headers)
        return "a proxy on a Unix socket" if named else None
    if not is_loopback(client[0]):
        return str(client[0])  # "localhost" is never a peer: the server gives addresses
    return next((host for host in forwarded_for(headers) if not is_loopback(host)), None)


def forwarded_for(headers: list[tuple[bytes, bytes]]) -> list[str]:
    """The hosts the proxy headers name (``for=`` of ``Forwarded``), ports and quotes removed."""
    found = []
    for name, value in headers:
        if name not in FORWARDED:
            continue
        for part in re.split(r"[,;]", value.decode("latin-1")):
            item = part.strip()
            if name == b"forwarded":
                key, _, item = item.partition("=")
                if key.strip().lower() != "for":
                    continue
            if item := item.strip().strip('"'):
                found.append(_host(item))
    return found


def foreign_site(scope: Scope) -> str | None:
    """The other site a loopback request comes from (a browser's page); None when none.

    A browser on this machine is a loopback peer whatever page drives it: one that rebinds its
    own name to 127.0.0.1 sends that name as ``Host``, and one that posts a form across sites
    sends its ``Origin``. Only a TCP request is judged (a Unix socket is no browser's).
    """
    if not scope.get("client"):
        return None
    headers = dict(scope.get("headers", []))
    host = headers.get(b"host", b"").decode("latin-1")
    if host and not is_loopback(_host(host)):
        return f"Host {host!r:.80}"
    origin = headers.get(b"origin")
    if origin is not None:
        named = urlsplit(origin.decode("latin-1")).hostname
        if named is None or not is_loopback(named):
            return f"Origin {origin.decode('latin-1')!r:.80}"
    return None


def _host(item: str) -> str:
    """``[::1]:80`` → ``::1``, ``1.2.3.4:80`` → ``1.2.3.4``; anything else as it is."""
    if item.startswith("[") and "]" in item:
        return item[1 : item.index("]")]
    if item.count(":") == 1:
        return item.split(":", 1)[0]
    return item


class LoopbackOnly:
    """Without API keys, refuse every request from another machine with 403 (and warn once).

    A request from this machine that another site's page drives (a rebound name in ``Host``, a
    foreign ``Origin``) is refused too: the local principal is an admin, and a browser would
    otherwise lend it to any page it shows.
    """

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app
        self.warned = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Let a loopback peer through; answer any other 403 saying what to set."""
        peer = foreign_peer(scope) if scope["type"] == "http" else None  # no websockets served
        site = foreign_site(scope) if scope["type"] == "http" else None
        if peer is None and site is None:
            await self.app(scope, receive, send)
            return
        if peer is None:  # this machine, driven by another site's page
            detail = (
                f"this service has no API keys, so it answers only this machine's own pages and "
                f"clients, not a request of {site}: open it as 127.0.0.1 or localhost"
            )
            await problem(403, detail)(scope, receive, send)
            return
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


class KeysRequired:
    """Every HTTP request must carry one of the configured API keys (401 otherwise).

    For a server of ours without the API's routes (``harness mcp serve-sample --http``): the
    same keys and the same Bearer scheme, any role, checked before the request is read.
    """

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        """Wrap ``app``; ``settings`` must have keys."""
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Let a request with a configured key through; answer any other 401."""
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            scheme, _, offered = header.strip().partition(" ")
            credentials = (
                HTTPAuthorizationCredentials(scheme=scheme, credentials=offered.strip())
                if offered.strip()
                else None
            )
            try:
                authenticate(self.settings, credentials)
            except Unauthenticated as refused:
                await problem(401, refused.detail, {"WWW-Authenticate": "Bearer"})(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)
