"""What routes depend on: the worker's services, built once per app (see ``api.main``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from api.errors import NotFound, NotShownYet
from api.event_stream import StreamCount
from api.metrics import LocalMetrics
from domain.errors import UnknownAggregateError
from projections.queries import run_row

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID

    from sqlalchemy import Engine

    from api.auth import Principal
    from api.feed_hub import FeedHub
    from application.dispatch import RunDispatcher
    from application.store import HarnessStore
    from infrastructure.settings import Settings
    from infrastructure.tool_catalog import ToolView
    from projections.runner import Projector

READ_POLL = 0.05
"""Seconds between looks at the read tables while waiting for a run to appear there."""
NOT_SHOWN_RETRY = 1
"""Seconds a client is told to wait before asking again for a run not shown yet."""


@dataclass
class Worker:
    """What the routes of one worker use (opened by ``api.main`` through the composition root)."""

    settings: Settings
    store: HarnessStore
    engine: Engine
    projector: Projector
    dispatcher: RunDispatcher
    hub: FeedHub
    tool_views: Callable[[], list[ToolView]]
    """Every tool of this worker with its admission (``GET /v1/tools``)."""
    local_metrics: LocalMetrics = field(default_factory=LocalMetrics)
    """This process's admission refusals and open streams (``GET /metrics``)."""
    streams: StreamCount = field(init=False)
    """The event streams this worker sends, capped at ``HARNESS_MAX_STREAMS`` (and per key)."""

    def __post_init__(self) -> None:
        """Count the streams into the metrics' gauges; show the worker's limits there."""
        settings, metrics = self.settings, self.local_metrics
        gauges = (metrics.streams, metrics.streams_by_key)
        self.streams = StreamCount(gauges, settings.max_streams, settings.streams_per_key)
        metrics.show_limits(
            settings.max_concurrent_runs,
            min(
                settings.runs_per_key or settings.max_concurrent_runs, settings.max_concurrent_runs
            ),
            settings.max_streams,
            min(settings.streams_per_key or settings.max_streams, settings.max_streams),
        )

    def visible_run(self, run_id: UUID, caller: Principal) -> dict[str, object]:
        """The run's ``diagnosis_run`` row, if it exists and the caller may see it; else 404.

        A run that exists in the log but not yet in the read tables (just started, or the
        projections lag) is waited for, at most ``HARNESS_READ_WAIT`` seconds; still not shown
        then, :class:`~api.errors.NotShownYet` says so (202), never that it does not exist.
        """
        self.fresh("diagnosis_run")
        row = self._row(run_id)
        if row is None:
            self._owned_in_log(run_id, caller)
            row = self._wait_for_row(run_id)
        if not caller.owns(str(row["owner"])):
            raise NotFound(f"no run {run_id} exists")
        return row

    def owned_run(self, run_id: UUID, caller: Principal) -> None:
        """404 unless the run exists and the caller may see it: from its row, else from the log.

        For what the log itself answers (a cancel, an explanation, the feed): no wait for the
        read tables, which may not show the run yet.
        """
        row = self._row(run_id)
        if row is None:
            self._owned_in_log(run_id, caller)
        elif not caller.owns(str(row["owner"])):
            raise NotFound(f"no run {run_id} exists")

    def _owned_in_log(self, run_id: UUID, caller: Principal) -> None:
        try:
            owner = self.store.get_run(run_id).owner
        except UnknownAggregateError:
            raise NotFound(f"no run {run_id} exists") from None
        if not caller.owns(owner):
            raise NotFound(f"no run {run_id} exists")

    def fresh(self, *names: str) -> None:
        """Let the named projections reach the log's head as it is now first (bounded).

        A stream may have sent a run's entries as soon as their events committed, before any
        read table has them (:class:`~projections.feed_ahead.FeedAhead`): a client that has
        seen a run's ``done`` then reads its row or timeline finds them finished too.
        """
        self.projector.wait_for(self.store.head(), self.settings.read_wait, list(names))

    def _row(self, run_id: UUID) -> dict[str, object] | None:
        with self.engine.connect() as connection:
            return run_row(connection, str(run_id))

    def _wait_for_row(self, run_id: UUID) -> dict[str, object]:
        deadline = time.monotonic() + self.settings.read_wait
        while (row := self._row(run_id)) is None:
            if time.monotonic() > deadline:
                raise NotShownYet(run_id, NOT_SHOWN_RETRY)
            time.sleep(READ_POLL)
        return row


def worker(request: Request) -> Worker:
    """FastAPI dependency: this worker's services."""
    found: Worker = request.app.state.worker
    return found


WorkerDep = Annotated[Worker, Depends(worker)]
