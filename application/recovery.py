"""Crash recovery: the runs whose worker process died are ended, so none stays RUNNING.

A run records the worker executing it (``RUN_STARTED.worker``), and every worker keeps a lease
(``infrastructure.leases``). A sweep looks at each unfinished run and its worker's lease:

- LIVE: the worker is alive and executes the run; it is never touched.
- DEAD: the worker's process is proved gone (same machine, it no longer runs): ended at once.
- EXPIRED or UNKNOWN (no lease: pruned after it expired, or a run recorded before workers
  were): ended once the run is one lease TTL old too, so a worker that was paused past its
  lease and starts a run before its next beat does not lose that run.
- NOT_EXECUTING: a run of the sweeping worker itself that it no longer executes (its execution
  could not record the end); ended once it is one TTL old.

Silence is only trusted once the sweeper has seen the database answer for one TTL: after the
database was away, every worker's lease may have lapsed, and live workers need a beat to renew
theirs before their runs could be taken for orphans (:class:`RecoveryLoop`). A proved DEAD
worker needs no such wait.

Ending is :meth:`HarnessStore.end_orphaned`: TIMED_OUT when the deadline has passed, else FAILED
with WORKER_LOST, then ``RUN_FINISHED``, decided on the latest stream. First terminal wins: a
slow but alive worker finishing at the same moment, or two sweeps racing, still end each run
once, and its feed ends with ``failure`` and ``done`` like that of any failed run.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from domain.errors import UnknownAggregateError

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence
    from datetime import datetime
    from uuid import UUID

    from application.ports import Clock
    from application.store import HarnessStore
    from domain.values import Termination

log = logging.getLogger(__name__)


class Liveness(Enum):
    """What a sweep knows of the worker of an unfinished run."""

    LIVE = "LIVE"
    EXPIRED = "EXPIRED"
    DEAD = "DEAD"
    UNKNOWN = "UNKNOWN"
    NOT_EXECUTING = "NOT_EXECUTING"


class WorkerLeases(Protocol):
    """The workers' leases (``infrastructure.leases.SqlLeases``)."""

    def verdicts(self, workers: Collection[str]) -> Mapping[str, Liveness]:
        """Each named worker's liveness: LIVE, EXPIRED, DEAD or UNKNOWN (no lease)."""
        ...

    def prune(self) -> int:
        """Forget the expired leases."""
        ...


@dataclass(frozen=True)
class Unfinished:
    """A run without ``RUN_FINISHED`` yet, as the read side lists it."""

    run_id: UUID
    created_at: datetime


@dataclass(frozen=True)
class Recovered:
    """A run this sweep ended: its worker, what was known of it, and the end recorded."""

    run_id: UUID
    worker: str
    liveness: Liveness
    termination: Termination
    position: int


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did."""

    ended: list[Recovered] = field(default_factory=list)
    live: int = 0
    """Unfinished runs of live workers, left alone."""
    waiting: int = 0
    """Runs of silent workers, not one lease TTL old yet: a later sweep decides them."""


class RecoverySweep:
    """Ends the unfinished runs whose worker is lost; safe from any number of processes."""

    def __init__(
        self,
        store: HarnessStore,
        leases: WorkerLeases,
        unfinished: Callable[[], Sequence[Unfinished]],
        clock: Clock,
        ttl: float,
        me: str = "",
        executing: Callable[[], Collection[UUID]] | None = None,
    ) -> None:
        """Sweep ``store``'s runs listed by ``unfinished``.

        ``me`` is the sweeping worker's own id, whose runs are left alone unless ``executing``
        (the runs it executes now) says it no longer executes them.
        """
        self.store = store
        self.leases = leases
        self.unfinished = unfinished
        self.clock = clock
        self.ttl = timedelta(seconds=ttl)
        self.me = me
        self.executing = executing
        self._workers: dict[UUID, str] = {}

    def sweep(self, trust_silence: bool = True) -> SweepReport:
        """One pass: end every run whose worker is lost, then forget expired leases.

        Without ``trust_silence`` only runs of workers proved DEAD are ended; the runs of silent
        workers (EXPIRED, UNKNOWN, NOT_EXECUTING) are counted as waiting, and leases are kept.
        """
        runs = self.unfinished()
        workers = self._workers_of(runs)
        verdicts = self.leases.verdicts({w for w in workers.values() if w and w != self.me})
        executing = self.executing() if self.executing is not None else ()
        now = self.clock.now()
        ended: list[Recovered] = []
        live = waiting = 0
        for run in runs:
            if run.run_id not in workers:
                continue  # listed by the read side, unknown to the log: nothing to end
            worker = workers[run.run_id]
            liveness = self._liveness(worker, run.run_id, verdicts, executing)
            if liveness is Liveness.LIVE:
                live += 1
            elif liveness is not Liveness.DEAD and (
                not trust_silence or run.created_at > now - self.ttl
            ):
                waiting += 1
            else:
                self._end(run.run_id, worker, liveness, now, ended)
        if trust_silence:
            self.leases.prune()
        return SweepReport(ended, live, waiting)

    def _liveness(
        self,
        worker: str,
        run_id: UUID,
        verdicts: Mapping[str, Liveness],
        executing: Collection[UUID],
    ) -> Liveness:
        if not worker:
            return Liveness.UNKNOWN
        if worker == self.me:
            if self.executing is None or run_id in executing:
                return Liveness.LIVE
            return Liveness.NOT_EXECUTING
        return verdicts.get(worker, Liveness.UNKNOWN)

    def _end(
        self, run_id: UUID, worker: str, liveness: Liveness, now: datetime, ended: list[Recovered]
    ) -> None:
        result = self.store.end_orphaned(run_id, now)
        if result.position is None:
            return  # its worker, a cancel or another sweep ended it first
        end = result.termination
        ended.append(Recovered(run_id, worker, liveness, end, result.position))
        log.warning(
            "recovery: run %s ended %s (%s) at log position %d: its worker %s is %s",
            run_id,
            end.state.value,
            end.reason.value,
            result.position,
            worker or "(none recorded)",
            liveness.value,
        )

    def _workers_of(self, runs: Sequence[Unfinished]) -> dict[UUID, str]:
        """Each run's worker from its ``RUN_STARTED`` (read once per run: it never changes)."""
        wanted = {run.run_id for run in runs}
        self._workers = {k: v for k, v in self._workers.items() if k in wanted}
        for run_id in wanted - self._workers.keys():
            try:
                self._workers[run_id] = self.store.run_started(run_id).worker
            except UnknownAggregateError:
                continue
        return dict(self._workers)


class RecoveryLoop:
    """Sweeps at once, then every ``interval`` seconds, in a thread of its own until closed.

    Silent workers' runs are only ended once the database has answered for ``settle`` seconds
    (one lease TTL by default) since the latest of: this loop's start, its last failed sweep,
    and ``troubled()`` (the heartbeat's last failed beat, in ``time.monotonic`` seconds).
    """

    def __init__(
        self,
        sweep: RecoverySweep,
        interval: float,
        *,
        settle: float | None = None,
        troubled: Callable[[], float] | None = None,
    ) -> None:
        """Run ``sweep`` periodically."""
        self.sweep = sweep
        self.interval = interval
        self.settle = sweep.ttl.total_seconds() if settle is None else settle
        self.troubled = troubled
        self.sweeps = 0
        """Sweeps completed (failed ones are logged and not counted)."""
        self._trouble = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="harness-recovery", daemon=True)

    def start(self) -> RecoveryLoop:
        """Start sweeping."""
        self._thread.start()
        return self

    def trusts_silence(self) -> bool:
        """Whether the database has answered long enough for lapsed leases to mean lost workers."""
        trouble = max(self._trouble, self.troubled() if self.troubled else 0.0)
        return time.monotonic() - trouble >= self.settle

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sweep.sweep(self.trusts_silence())
                self.sweeps += 1
            except Exception as error:  # the database may be away: try again next interval
                self._trouble = time.monotonic()
                log.warning(
                    "recovery: sweep failed (%s: %s); next in %.0fs",
                    type(error).__name__,
                    str(error).splitlines()[0] if str(error) else "",
                    self.interval,
                )
            self._stop.wait(self.interval)

    def close(self) -> None:
        """Stop sweeping (a sweep in progress finishes first)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
