"""``POST /v1/chat``: ask and watch the answer arrive as Server-Sent Events."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from fastapi import APIRouter

from api.auth import Writer
from api.deps import WorkerDep
from api.event_stream import EventStream
from api.feed import follow
from api.problem_docs import error_responses
from api.routes.starting import start_run
from api.schemas import ChatCreate
from api.sse_schema import STREAM_DOC
from domain.states import CancellationReason

if TYPE_CHECKING:
    from uuid import UUID

    from api.deps import Worker

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1", tags=["chat"])


@router.post(
    "/chat",
    operation_id="chat",
    summary="Ask, and stream the run",
    status_code=200,
    response_class=EventStream,
    responses={200: STREAM_DOC, **error_responses(401, 403, 404, 413, 429, 503, streaming=True)},
)
async def chat(body: ChatCreate, worker: WorkerDep, caller: Writer) -> EventStream:
    """Start a run and stream its public events (SPEC §11) until ``done``.

    Leaving early cancels the run (CLIENT_DISCONNECTED) and nothing more is sent; a cancelled
    run ends with a ``failure`` and no ``done``. Use ``POST /v1/runs`` to start a run that
    outlives its first watcher.
    """
    slot = worker.streams.take(
        caller.name
    )  # before the run starts: a run nobody may watch is not started
    try:
        started = await anyio.to_thread.run_sync(start_run, worker, body, caller)
    except BaseException:
        slot.release()
        raise
    feed = follow(worker.hub, str(started.run_id), 0, worker.settings.sse_keepalive)
    stream = EventStream(feed, lambda: _abandoned(worker, started.run_id), slot)
    stream.headers["Location"] = f"/v1/runs/{started.run_id}"
    return stream


def _abandoned(worker: Worker, run_id: UUID) -> None:
    """The client left mid-run: the seed's rule cancels it (a no-op once it has ended)."""
    try:
        worker.store.cancel(run_id, CancellationReason.CLIENT_DISCONNECTED)
    except Exception:  # a thread of its own: log, never raise into nowhere
        log.exception("run %s: the client left, and cancelling the run failed", run_id)
