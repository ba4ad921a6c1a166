"""The live trace exporter: a follower of the log that exports each run once it has finished.

It keeps its position in the log durably, as a row of ``projection_tracking`` under its own
name (:data:`NAME`), and moves it only after the receiver took a run's trace: when the receiver
is down it retries with backoff (capped) from the same position, and whatever finished
meanwhile is exported when the receiver returns; a restart resumes from the row. It runs in its
own thread, woken by this process's appends of ``RUN_FINISHED`` and by a poll, so no run and no
request ever waits for it.

The position moves by compare-and-set: two followers of one database (a second projection
process, say) never move it backwards, and at worst both export a run. That duplicate is
harmless: trace and span ids are derived from the log (:mod:`projections.otel_data`), so a
receiver gets the same spans twice, not a second trace. The service starts the follower where
the projections run (in the worker, or in ``harness projections run`` beside several workers),
so one deployment has one.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from eventsourcing.persistence import PersistenceError
from sqlalchemy.exc import SQLAlchemyError

from application.ports import StoreError
from domain.redaction import redact
from domain.run import Run
from infrastructure.read_store import SqlReadStore
from projections.otel_export import ExportFailedError, TraceExport
from projections.runner import brief

if TYPE_CHECKING:
    from collections.abc import Sequence

    from opentelemetry.sdk.trace.export import SpanExporter
    from sqlalchemy import Engine

    from application.store import HarnessStore

log = logging.getLogger(__name__)

NAME = "otel_export"
"""Its row in ``projection_tracking``: the last log position whose finished run was exported."""
FIRST_RETRY = 1.0
"""Seconds before the first retry after a failure; each further failure doubles it."""
LAST_RETRY = 60.0
"""The longest wait between retries."""
TROUBLES = (ExportFailedError, StoreError, SQLAlchemyError, PersistenceError, OSError)
"""Failures that leave the position where it is, to be retried."""


class TraceFollower:
    """Exports every run whose ``RUN_FINISHED`` lies after its position, in its own thread."""

    def __init__(
        self,
        export: TraceExport,
        read: SqlReadStore,
        *,
        poll_interval: float = 1.0,
        retry: tuple[float, float] = (FIRST_RETRY, LAST_RETRY),
    ) -> None:
        """Export through ``export``, keeping the position among ``read``'s tracking rows.

        ``retry`` is the first and the longest wait after a failure, in seconds.
        """
        self.export = export
        self.read = read
        self.poll_interval = poll_interval
        self.retry = retry
        self.failures = 0
        """Failed attempts in a row (0 after a success)."""
        self.exported = 0
        """Runs exported by this follower."""
        self.stop_event = threading.Event()
        self.wakes = threading.Event()
        self._thread: threading.Thread | None = None

    def position(self) -> int:
        """The last log position whose run was exported (or found to need none)."""
        self.read.ensure_tracking([NAME])
        return self.read.positions().get(NAME, 0)

    def step(self) -> int:
        """Export each run finished after the position, moving it past each; the runs exported.

        Raises what stopped it (the receiver, the database); the position stays after the last
        run exported, so nothing is skipped.
        """
        position = self.position()
        head = self.export.store.head()
        exported = 0
        for finished_at, run_id in self.export.finished_runs(position, stop=head):
            if self.stop_event.is_set():
                return exported
            try:
                self.export.export(run_id)
            except TROUBLES:
                raise
            except Exception:  # a bug mapping one run must not hold back every later one
                log.exception("traces: the run %s could not be exported; skipped", run_id)
            exported += 1
            if not self._advance(position, finished_at):
                return exported  # another follower moved it: start again from there
            position = finished_at
        if head > position:
            self._advance(position, head)
        return exported

    def _advance(self, old: int, new: int) -> bool:
        with self.read.transaction() as view:
            return view.advance({NAME: old}, new, None)

    def wake(self) -> None:
        """Look at the log now."""
        self.wakes.set()

    def _appended(self, events: Sequence[object]) -> None:
        if any(isinstance(event, Run.RunFinished) for event in events):
            self.wake()

    def start(self) -> TraceFollower:
        """Follow in a daemon thread until :meth:`close`."""
        self.export.store.listeners.append(self._appended)
        self._thread = threading.Thread(target=self._follow, name="harness-otel", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout: float = 10.0) -> None:
        """Stop following: an export in flight stops retrying; wait for the thread."""
        self.stop_event.set()
        self.wake()
        if self._appended in self.export.store.listeners:
            self.export.store.listeners.remove(self._appended)
        self.export.exporter.shutdown()
        if self._thread is not None:
            self._thread.join(timeout)

    def _follow(self) -> None:
        while not self.stop_event.is_set():
            self.wakes.clear()
            try:
                self.exported += self.step()
            except TROUBLES as error:
                self._failed(error)
                continue
            except Exception:  # supervised: a bug is logged loudly, the follower keeps trying
                log.exception("traces: the export failed")
                self._failed(None)
                continue
            if self.failures:
                log.warning("traces: exporting again after %d failed attempts", self.failures)
            self.failures = 0
            self.wakes.wait(self.poll_interval)

    def _failed(self, error: BaseException | None) -> None:
        """Count a failure, say so (once per streak, then every tenth), and wait to retry."""
        self.failures += 1
        first, longest = self.retry
        wait = min(longest, first * 2 ** min(self.failures - 1, 30))
        if error is not None and self.failures % 10 == 1:
            log.warning(
                "traces: %s (attempt %d); retrying in %.1fs",
                redact(brief(error)),  # the receiver's URL may carry its credentials
                self.failures,
                wait,
            )
        self.stop_event.wait(wait)


def follow_traces(
    store: HarnessStore,
    engine: Engine,
    exporter: SpanExporter,
    poll_interval: float,
    retry: tuple[float, float] | None = None,
) -> TraceFollower:
    """A follower exporting ``store``'s runs through ``exporter``, its position on ``engine``.

    Started; ``retry`` is its first and longest wait after a failure (None: the defaults).
    """
    export = TraceExport(store, exporter)
    follower = TraceFollower(
        export,
        SqlReadStore(engine),
        poll_interval=poll_interval,
        retry=retry or (FIRST_RETRY, LAST_RETRY),
    )
    return follower.start()
