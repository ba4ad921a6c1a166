"""Builds the FastAPI application from ``Settings`` (the service grows with later issues)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI, HTTPException, Request
from pydantic import BaseModel

from application.store import HarnessStore, StoreError
from infrastructure.database import create_sql_engine
from infrastructure.eventstore import open_store
from infrastructure.live import LiveProjections
from projections.runner import Projector

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from infrastructure.settings import Settings


class HealthPublic(BaseModel):
    """Liveness: the process answers."""

    status: str


class ReadinessPublic(BaseModel):
    """Readiness: the event store answers, with its backend and last log position."""

    status: str
    backend: str
    head: int


class ProblemPublic(BaseModel):
    """An error body: what went wrong and what to do."""

    detail: str


def create_app(settings: Settings, store: HarnessStore | None = None) -> FastAPI:
    """The service app; opens the store at start-up unless one is given."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.store = store or open_store(settings)
        engine = create_sql_engine(settings)
        live = None
        if settings.projections_in_process:
            live = LiveProjections(
                settings,
                app.state.store,
                engine,
                poll_interval=settings.projection_poll,
                batch_size=settings.projection_batch,
            ).start()
        app.state.projector = live.projector if live else Projector(app.state.store, engine)
        try:
            yield
        finally:
            if live is not None:
                live.close()
            engine.dispose()
            if store is None:
                app.state.store.close()

    app = FastAPI(
        title="Diagnosis Harness",
        version="0.1.0",
        summary="Event-sourced backend for operational-diagnosis agents.",
        lifespan=lifespan,
    )

    @app.get("/healthz", summary="Liveness", tags=["health"])
    def healthz() -> HealthPublic:
        """The process is alive."""
        return HealthPublic(status="ok")

    @app.get(
        "/readyz",
        summary="Readiness",
        tags=["health"],
        responses={503: {"model": ProblemPublic, "description": "The event store is unavailable"}},
    )
    def readyz(request: Request) -> ReadinessPublic:
        """The event store answers; 503 with Retry-After when it does not."""
        app_store: HarnessStore = request.app.state.store
        try:
            head = app_store.head()
        except StoreError as error:
            raise HTTPException(
                status_code=503,
                detail=f"event store unavailable: {error}",
                headers={"Retry-After": "5"},
            ) from error
        return ReadinessPublic(status="ready", backend=settings.database.kind, head=head)

    return app
