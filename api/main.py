"""Builds the FastAPI application from ``Settings``: one worker's services, routes and errors."""

from __future__ import annotations

import logging
import os
import sys
import threading
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from api import console_routes, errors
from api.access_log import redact_access_log
from api.auth import LoopbackOnly, is_loopback
from api.deps import Worker
from api.feed_hub import FeedHub
from api.http_metrics import HttpMetrics
from api.metrics import multiprocess_problem
from api.problem_docs import document_problems
from api.request_clock import set_request_deadline
from api.request_head import HeadLimits, set_head_limits
from api.routes import audit, chat, evals, metrics, model, runs, sessions, stats, system, tools
from api.schemas import document_limits
from application.dispatch import RunDispatcher
from application.recovery import RecoveryLoop
from bootstrap.composition import Overrides, Services, bootstrap
from infrastructure.known_secrets import known_secrets
from infrastructure.otlp import configured_endpoint
from infrastructure.pg_listen import PgNotifyWake, read_channel
from infrastructure.settings import ConfigurationError, Settings
from infrastructure.tool_sources import tool_views
from infrastructure.version import harness_version
from projections.feed_ahead import FeedAhead

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator, Mapping

    from application.store import HarnessStore
    from projections.runner import Projector

log = logging.getLogger(__name__)

FEED_LISTEN_APPLICATION_NAME = "harness-feed-listen"

DESCRIPTION = """\
Ask operational questions and get answers you can audit. A question becomes a **run**: routed
(system chat, knowledge question or diagnosis), executed under budgets and a deadline, and
published only after its evidence and semantic checks, or as a typed safe fallback. Every step is
an event in the log; what you read here are projections of it.

Authenticate with `Authorization: Bearer <key>` when the service has API keys (roles: user,
auditor, admin). Streams follow the WHATWG event-stream format; resume one with `Last-Event-ID`.
"""


ROUTERS = (
    chat.router,
    runs.router,
    sessions.router,
    system.router,
    tools.router,
    model.router,
    audit.router,
    stats.router,
    evals.router,
    metrics.router,
    console_routes.router,
)


def create_app(settings: Settings, store: HarnessStore | None = None) -> FastAPI:
    """The service app; opens the store at start-up unless one is given."""
    set_request_deadline(settings.request_read_timeout)  # this process's (api.http_protocol)
    set_head_limits(HeadLimits(settings.max_header_bytes, settings.max_headers))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with opened_worker(settings, store) as worker:
            app.state.worker = worker
            yield

    app = FastAPI(
        title="Diagnosis Harness",
        version=harness_version(),
        summary="Event-sourced backend for operational-diagnosis agents.",
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served by api/console_routes.py from the package, not from a CDN
        redoc_url=None,
    )
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document_problems(document_limits(original(), settings))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    redact_access_log(known_secrets(settings, os.environ))
    _guarded(app, settings)
    for router in ROUTERS:
        app.include_router(router)
    return app


def _guarded(app: FastAPI, settings: Settings) -> None:
    """The error handlers, and the middleware every request passes (outermost last)."""
    errors.install(app)
    app.add_middleware(errors.BodyLimit, limit=settings.max_body_bytes)
    if not settings.api_keys:  # the local admin: for this machine only, however it is bound
        app.add_middleware(LoopbackOnly)
    app.add_middleware(HttpMetrics)  # the outermost: the refusals above are counted too


def create_app_from_environment() -> FastAPI:
    """The app with settings from HARNESS_* variables (for ``uvicorn --factory`` workers).

    Without API keys, a bind address that is not loopback (``--host`` or ``UVICORN_HOST``) is
    warned about at once: the app answers only this machine's requests (``LoopbackOnly``).
    """
    try:
        settings = Settings.from_environment()
        configured_endpoint(os.environ)  # the live trace exporter's receiver, if one is named
    except ConfigurationError as error:
        log.error("invalid configuration: %s", error)  # one line, as the CLI says it
        raise SystemExit(2) from None
    problem = multiprocess_problem(os.environ)
    if problem:
        log.error("invalid configuration: %s", problem)
        raise SystemExit(2)
    host = bind_host(sys.argv, os.environ)
    if not settings.api_keys and host is not None and not is_loopback(host):
        log.warning(
            "bound to %s without API keys: only requests from this machine are answered (403 for"
            " others); set HARNESS_API_KEYS to serve other machines",
            host,
        )
    return create_app(settings)


def bind_host(argv: list[str], environ: Mapping[str, str]) -> str | None:
    """The host uvicorn was told to bind to on its command line or in its environment."""
    for index, arg in enumerate(argv):
        if arg == "--host" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--host="):
            return arg.split("=", 1)[1]
    return environ.get("UVICORN_HOST")


@contextmanager
def opened_worker(settings: Settings, store: HarnessStore | None = None) -> Iterator[Worker]:
    """One worker's services (the API's, or ``harness mcp serve``'s), closed on leaving."""
    closers: list[Callable[[], None]] = []
    try:
        yield _start(settings, store, closers)
    finally:
        for close in reversed(closers):
            close()


def _start(
    settings: Settings, given: HarnessStore | None, closers: list[Callable[[], None]]
) -> Worker:
    """Open everything one worker needs through the composition root; ``closers`` undo it."""
    services = bootstrap(settings, overrides=Overrides(store=given))
    closers.append(services.close)
    service = services.chat
    hub = FeedHub(services.engine, threading.Event(), settings.feed_poll).start()
    services.defer(hub.close)
    projector = _projections(services, hub)
    beats = services.heartbeat
    dispatcher = RunDispatcher(
        service,
        settings.max_concurrent_runs,
        services.previous_turns(projector),
        unsure=beats.unsure if beats else None,
        per_owner=settings.runs_per_key,
    )
    services.defer(dispatcher.close)
    loop = RecoveryLoop(
        services.recovery_sweep(dispatcher.executing),
        settings.recovery_interval,
        troubled=(lambda: beats.troubled_at) if beats else None,
    )
    services.defer(loop.start().close)
    views = partial(tool_views, service.tools, services.sources)
    found = Worker(settings, services.store, services.engine, projector, dispatcher, hub, views)
    services.defer(found.local_metrics.close)
    return found


def _projections(services: Services, hub: FeedHub) -> Projector:
    """The projector of this worker, and what brings the feed hub new entries.

    The entries of this worker's own appends go to its streams at once (:class:`FeedAhead`). In
    process, the feed follower then hands each committed batch to the hub; with the projections
    in their own process (several workers on PostgreSQL), its NOTIFY after every batch wakes
    the hub to read them.
    """
    settings = services.settings
    ahead = FeedAhead(hub.ahead)
    if settings.projections_in_process:
        live = services.live_projections()
        live.ahead = ahead.appended  # the streams first, then the feed follower
        live.published.append(hub.publish)
        services.defer(live.start().close)
        services.trace_follower()  # where the projections run: one per deployment
        return live.projector
    services.store.listeners.append(ahead.appended)
    services.defer(lambda: services.store.listeners.remove(ahead.appended))
    if settings.database.kind == "postgres":
        stop = threading.Event()
        listener = PgNotifyWake(
            settings, read_channel(settings), hub.wake.set, stop, FEED_LISTEN_APPLICATION_NAME
        )
        thread = threading.Thread(target=listener.run, name="harness-feed-listen", daemon=True)
        thread.start()

        def close_listener() -> None:
            listener.interrupt()
            thread.join(timeout=5)

        services.defer(close_listener)
    return services.projector()
