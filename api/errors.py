"""The one mapping from errors to HTTP answers, and the request-size limit.

Every error is an RFC 9457 problem (``application/problem+json``): ``type`` (``about:blank``:
the status says it all), ``title`` (the status's phrase), ``status``, and ``detail``, the
sentence naming what was wrong and what to do that the bodies always had (422 keeps FastAPI's
list of field errors there). Nothing escapes as a 500 with a traceback: an unexpected error is
logged and answered 500 with a plain sentence.
"""

from __future__ import annotations

import json
import logging
import math
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import DataError as StoredDataError
from eventsourcing.persistence import PersistenceError
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, SQLAlchemyError
from starlette.exceptions import HTTPException

from api.schemas import RunNotShownPublic
from application.dispatch import AdmissionRefused
from application.ports import StoreError, StoreNotInitialisedError
from domain.errors import (
    ConcurrentWriteError,
    InvalidCommandError,
    UnknownAggregateError,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from uuid import UUID

    from fastapi import FastAPI, Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

RETRY_AFTER = "5"
"""Seconds a client waits before retrying when the database is unavailable."""


class NotFound(Exception):
    """A run or session that does not exist, or that this caller may not see."""


def no_session(session_id: str) -> NotFound:
    """The one answer for a session that does not exist or is someone else's (no oracle)."""
    return NotFound(
        f"no session {session_id!r} of yours exists; to start a new one, send another "
        "session_id or none"
    )


class NotShownYet(Exception):
    """A run the log holds (the caller's) that the read tables do not show yet: 202, retry."""

    def __init__(self, run_id: UUID, retry_after: int) -> None:
        """Say which run, and in how many seconds to ask again."""
        super().__init__(
            f"run {run_id} was accepted but is not shown yet: the read tables have not caught up"
            f" with the log (see GET /v1/projections); retry in {retry_after} s"
        )
        self.run_id = run_id
        self.retry_after = retry_after


class BadRequest(Exception):
    """A malformed header or parameter the schema cannot describe (e.g. ``Last-Event-ID``)."""


PROBLEM_JSON = "application/problem+json"
"""The media type of every error (RFC 9457)."""


def problem(status: int, detail: Any, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error response: the problem of ``status`` with its ``detail`` (a sentence)."""
    body = problem_body(status, detail)
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)


def raw_problem(status: int, detail: str) -> bytes:
    """A whole HTTP/1.1 answer carrying the problem, closing the connection after it.

    For the answers the protocol writes before any app sees the request (431, 408).
    """
    body = json.dumps(problem_body(status, detail)).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: {PROBLEM_JSON}\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def problem_body(status: int, detail: Any) -> dict[str, Any]:
    """RFC 9457's members for ``status``, and ``detail`` as the bodies always carried it."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    return {"type": "about:blank", "title": title, "status": status, "detail": detail}


PLAIN: tuple[tuple[type[Exception], int], ...] = (
    (NotFound, 404),
    (UnknownAggregateError, 404),
    (BadRequest, 400),
)
"""Errors whose own message is the answer, by status."""


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""
    app.exception_handler(HTTPException)(_http)
    for kind, status in PLAIN:
        app.add_exception_handler(kind, _plain(status))
    for kind, handler in OWN:
        app.exception_handler(kind)(handler)
    for kind in UNAVAILABLE:
        app.exception_handler(kind)(_unavailable)
    for kind in UNEXPECTED:
        app.exception_handler(kind)(_unexpected)


def _plain(status: int) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handler(_request: Request, error: Exception) -> JSONResponse:
        return problem(status, str(error))

    return handler


async def _http(_request: Request, error: HTTPException) -> JSONResponse:
    """An ``HTTPException`` (a route's 401 or 403, an unknown path's 404, a 405) as a problem."""
    return problem(error.status_code, error.detail, dict(error.headers or {}))


async def _unprocessable(_request: Request, error: RequestValidationError) -> JSONResponse:
    """FastAPI's own 422 as a problem, inputs JSON cannot carry echoed printably."""
    detail = jsonable_encoder(error.errors(), custom_encoder={bytes: _escaped})
    return problem(422, _printable(detail))


async def _invalid(_request: Request, error: InvalidCommandError) -> JSONResponse:
    """A 422 of the shape of FastAPI's own, so the one documented schema describes both."""
    return problem(
        422, [{"type": "value_error", "loc": ["body"], "msg": str(error), "input": None}]
    )


async def _busy(request: Request, error: AdmissionRefused) -> JSONResponse:
    """A 429 that says when to try again (counted for ``GET /metrics``)."""
    worker = getattr(request.app.state, "worker", None)
    if worker is not None:
        worker.local_metrics.refusals.inc()
    return problem(429, str(error), {"Retry-After": str(error.retry_after)})


async def _not_shown_yet(_request: Request, error: NotShownYet) -> JSONResponse:
    """A 202: the run exists in the log; its row will be there when the projections catch up."""
    body = RunNotShownPublic(run_id=error.run_id, detail=str(error)).model_dump(mode="json")
    return JSONResponse(body, status_code=202, headers={"Retry-After": str(error.retry_after)})


async def _not_initialised(_request: Request, error: StoreNotInitialisedError) -> JSONResponse:
    """A 503 naming the store that is not initialised."""
    return problem(503, str(error), {"Retry-After": RETRY_AFTER})


async def _unavailable(_request: Request, error: Exception) -> JSONResponse:
    """A 503: the database is away, retry shortly."""
    log.warning("database unavailable: %s", first_line(error))
    return problem(
        503,
        f"the database is unavailable ({type(error).__name__}); retry shortly",
        {"Retry-After": RETRY_AFTER},
    )


async def _unexpected(request: Request, error: Exception) -> JSONResponse:
    """A 500 with a plain sentence; the traceback goes to the log."""
    log.exception("unexpected error in %s %s", request.method, request.url.path)
    return problem(500, "an unexpected error occurred; it was logged for the operators")


OWN: tuple[tuple[type[Exception], Callable[..., Awaitable[JSONResponse]]], ...] = (
    (RequestValidationError, _unprocessable),
    (InvalidCommandError, _invalid),
    (AdmissionRefused, _busy),
    (NotShownYet, _not_shown_yet),
    (StoreNotInitialisedError, _not_initialised),
)
"""Errors with a handler of their own."""

UNAVAILABLE = (StoreError, PersistenceError, SQLAlchemyError, ConcurrentWriteError)
"""Errors answered 503. A write conflict reaching a route: the commit could not be confirmed (its
connection was lost as it committed and the retry found the row) or a writer raced; retrying is
safe."""

UNEXPECTED = (Exception, DataError, StoredDataError)
"""Errors answered 500. A value the database refuses is no outage: retrying cannot help, and a
client's bad input is refused with a 422 before it gets there (api.params), so reaching here is
our bug."""


def _printable(value: Any) -> Any:
    """``value`` with what JSON cannot carry spelled out.

    NaN and the infinities become text; a lone surrogate (a request's JSON may escape one, UTF-8
    cannot encode it) becomes its backslash escape.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, list):
        return [_printable(v) for v in value]
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    return value


def _escaped(data: bytes) -> str:
    """Bytes as text, escaping what is not UTF-8 (a body sent as another media type)."""
    return data.decode("utf-8", "backslashreplace")


def first_line(error: BaseException) -> str:
    """The driver's first line of a database error (no SQL, no parameters)."""
    lines = str(getattr(error, "orig", None) or error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


class BodyLimit:
    """Refuse request bodies larger than ``limit`` bytes with 413, before the app reads them."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        """Wrap ``app``."""
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared length, then count the bytes as they arrive."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(scope, receive, send)
            return
        seen, refused = 0, False

        async def counted() -> Message:
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # answer now; the app sees the client go away
                    refused = True
                    await self._refuse(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def unless_refused(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counted, unless_refused)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem(413, f"the request body is larger than {self.limit} bytes")
        await response(scope, receive, send)
