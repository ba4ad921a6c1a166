"""``/v1/runs``: start detached runs, watch, cancel, list, and explain them."""

from __future__ import annotations

import re
from typing import Annotated, Any
from uuid import UUID

import anyio
from fastapi import APIRouter, Header, Query, Response, status

from api.auth import Caller, Writer
from api.deps import WorkerDep
from api.errors import BadRequest
from api.event_stream import EventStream
from api.feed import feed_ended, follow
from api.params import PageCursor, SessionId, UtcTime
from api.problem_docs import error_responses
from api.routes.starting import start_run
from api.schemas import (
    CancelPublic,
    ChatCreate,
    RunCreated,
    RunNotShownPublic,
    RunPublic,
    RunsPublic,
    TraceEventPublic,
    TracePublic,
)
from api.sse_schema import STREAM_DOC
from application.explain import RunExplanation, explain_run
from domain.release_states import FallbackType, ReleaseOutcome
from domain.states import CancellationReason, Intent, RunState
from projections.queries import trace_rows
from projections.run_listing import RunFilter, RunKey, RunsPage, list_runs

router = APIRouter(prefix="/v1/runs", tags=["runs"])

MAX_PAGE = 200
MAX_OFFSET = 2**31 - 1
EVENT_ID = re.compile(r"[0-9]{1,18}")
"""A ``Last-Event-ID`` this service sends: ASCII digits (at most 18, so it fits an int64)."""
MAX_EVENT_ID = 2**31 - 1
"""The largest event id a feed can hold (``sse_event.seq`` is an int4 on PostgreSQL)."""
TEXT = {"schema": {"type": "string"}}
Cursor = Annotated[
    PageCursor | None,
    Query(description="Start after the page that gave this `next_cursor` (not with offset)."),
]
NOT_SHOWN: dict[int | str, dict[str, Any]] = {
    202: {
        "model": RunNotShownPublic,
        "description": "The run was accepted but the read tables do not show it yet; ask again"
        " after Retry-After seconds",
        "headers": {"Retry-After": {"description": "Seconds to wait", **TEXT}},
    }
}


@router.post(
    "",
    operation_id="create_run",
    summary="Start a run in the background",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        202: {"headers": {"Location": {"description": "The run: /v1/runs/{run_id}", **TEXT}}},
        **error_responses(401, 403, 404, 413, 429, 503),
    },
)
def create_run(
    body: ChatCreate, worker: WorkerDep, caller: Writer, response: Response
) -> RunCreated:
    """Start a run and return at once; watch it at ``stream``. No watcher ever cancels it."""
    started = start_run(worker, body, caller)
    response.headers["Location"] = f"/v1/runs/{started.run_id}"
    return RunCreated(
        run_id=started.run_id,
        session_id=started.session_id,
        position=started.position,
        stream=f"/v1/runs/{started.run_id}/stream",
    )


@router.get(
    "", operation_id="list_runs", summary="List runs", responses=error_responses(400, 401, 503)
)
def list_all(
    worker: WorkerDep,
    caller: Caller,
    session_id: Annotated[SessionId | None, Query(description="Only this session's runs.")] = None,
    intent: Annotated[Intent | None, Query(description="What the router decided.")] = None,
    state: Annotated[RunState | None, Query(description="Termination state.")] = None,
    release_outcome: ReleaseOutcome | None = None,
    fallback_type: FallbackType | None = None,
    status_: Annotated[
        str | None,
        Query(alias="status", pattern="^(RUNNING|SUCCESS|FAILED|CANCELLED)$"),
    ] = None,
    created_after: Annotated[UtcTime | None, Query(description="Created at or after.")] = None,
    created_before: Annotated[UtcTime | None, Query(description="Created before.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    cursor: Cursor = None,
) -> RunsPublic:
    """Runs newest first, narrowed by the filters; a user sees only their own.

    Page with ``cursor`` (each page's ``next_cursor``): every page costs the same, however far
    down. ``count`` stops at 10,000 (``count_capped``).
    """
    start = _start_of(cursor, offset)
    where = RunFilter(
        owner=None if caller.reads_all else caller.name,
        session_id=session_id,
        intent=intent.value if intent else None,
        status=status_,
        release_outcome=release_outcome.value if release_outcome else None,
        fallback_type=fallback_type.value if fallback_type else None,
        termination_state=state.value if state else None,
        created_after=created_after,
        created_before=created_before,
    )
    worker.fresh("diagnosis_run")
    with worker.engine.connect() as connection:
        return _public(list_runs(connection, where, limit, offset, start), limit, offset)


def _public(page: RunsPage, limit: int, offset: int) -> RunsPublic:
    return RunsPublic(
        data=[RunPublic.model_validate(r) for r in page.rows],
        count=page.count,
        count_capped=page.count_capped,
        limit=limit,
        offset=offset,
        next_cursor=page.next.cursor() if page.next else None,
    )


def _start_of(cursor: str | None, offset: int) -> RunKey | None:
    if cursor is None:
        return None
    if offset:
        raise BadRequest("give either cursor or offset, not both (a cursor page starts after it)")
    try:
        return RunKey.from_cursor(cursor)
    except ValueError as error:
        raise BadRequest(f"{error}: pass a next_cursor of GET /v1/runs, or no cursor") from None


@router.get(
    "/{run_id}",
    operation_id="get_run",
    summary="One run",
    responses={**NOT_SHOWN, **error_responses(401, 404, 503)},
)
def get_run(run_id: UUID, worker: WorkerDep, caller: Caller) -> RunPublic:
    """The run's row: status, release outcome, fallback type, termination, usage (SPEC §12).

    A run the service accepted that its read tables do not show yet answers 202 with
    Retry-After; 404 means there is no such run of the caller's.
    """
    return RunPublic.model_validate(worker.visible_run(run_id, caller))


@router.get(
    "/{run_id}/stream",
    operation_id="stream_run",
    summary="Watch a run",
    status_code=200,
    response_class=EventStream,
    responses={
        200: STREAM_DOC,
        204: {"description": "The feed ended at or before Last-Event-ID: nothing more, ever."},
        **error_responses(400, 401, 404, 429, 503, streaming=True),
    },
)
async def stream(
    run_id: UUID,
    worker: WorkerDep,
    caller: Caller,
    last_event_id: Annotated[
        str,
        Header(
            description="Resume after this event id (what the client saw last); anything but a"
            " number is a 400.",
            json_schema_extra={"pattern": "^[0-9]{1,18}$"},  # documented; checked below (400)
        ),
    ] = "",
) -> Response:
    """Replay the run's feed from the start (or after ``Last-Event-ID``), then follow it live.

    The stream ends after the feed's last entry (``done``, or a cancelled run's ``failure``);
    resumed after that entry it answers 204, which tells an EventSource to stop reconnecting.
    Any number of watchers see the same feed; a watcher leaving never cancels the run.
    """
    after = _event_id(last_event_id)
    await anyio.to_thread.run_sync(worker.owned_run, run_id, caller)
    ended = worker.hub.ended_ahead(str(run_id), after)  # its ending sent, the table behind
    if ended or await anyio.to_thread.run_sync(feed_ended, worker.hub.engine, str(run_id), after):
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    slot = worker.streams.take(caller.name)
    feed = follow(worker.hub, str(run_id), after, worker.settings.sse_keepalive)
    return EventStream(feed, slot=slot)


def _event_id(value: str) -> int:
    digits = value.strip()
    if digits == "":
        return 0
    if not EVENT_ID.fullmatch(digits):  # not str.isdigit: "²" is a digit int() refuses
        raise BadRequest(
            f"Last-Event-ID must be the id of an event of this stream (a number), not {value!r:.40}"
        )
    return min(int(digits), MAX_EVENT_ID)  # after the largest id there is nothing either


@router.post(
    "/{run_id}/cancel",
    operation_id="cancel_run",
    summary="Cancel a run",
    responses=error_responses(401, 403, 404, 503),
)
def cancel(run_id: UUID, worker: WorkerDep, caller: Writer) -> CancelPublic:
    """Cancel (USER_REQUESTED) from any worker; the executing one stops at its next boundary."""
    worker.owned_run(run_id, caller)
    result = worker.store.cancel(run_id, CancellationReason.USER_REQUESTED)
    termination = result.termination
    return CancelPublic(
        run_id=run_id,
        cancelled=result.position is not None,
        termination_state=termination.state,
        termination_reason=str(termination.reason.value),
        position=result.position,
    )


@router.get(
    "/{run_id}/trace",
    operation_id="get_run_trace",
    summary="A run's timeline",
    responses={**NOT_SHOWN, **error_responses(401, 404, 503)},
)
def trace(run_id: UUID, worker: WorkerDep, caller: Caller) -> TracePublic:
    """Every event of the run in log order, with its TracePhase and status (SPEC §13).

    A run not shown yet by the read tables answers 202 with Retry-After, as ``GET`` of the run.
    """
    worker.visible_run(run_id, caller)
    worker.fresh("trace_event")
    with worker.engine.connect() as connection:
        rows = trace_rows(connection, str(run_id))
    return TracePublic(
        run_id=run_id, data=[TraceEventPublic.model_validate(r) for r in rows], count=len(rows)
    )


@router.get(
    "/{run_id}/explain",
    operation_id="explain_run",
    summary="Why it ended so",
    responses=error_responses(401, 404, 503),
)
def explain(run_id: UUID, worker: WorkerDep, caller: Caller) -> RunExplanation:
    """Every troubleshooting question of SPEC §15, answered from the log in words and fields."""
    worker.owned_run(run_id, caller)
    return explain_run(worker.store, run_id)
