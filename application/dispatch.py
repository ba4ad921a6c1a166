"""Runs executed in the background of one worker process, under a cap on how many at once.

A run is admitted before anything is recorded: when the worker already executes its cap, the
caller is refused (:class:`AdmissionRefused`) and no ``RUN_STARTED`` exists, so nothing is ever
half-started. An admitted run is started in the caller's thread (its id and log position are
known when :meth:`RunDispatcher.submit` returns) and executed in a thread of its own.

A run's slot is given back the moment its ``RUN_FINISHED`` is in the log, before anything else
in the process hears of it: a client that reads ``done`` and asks its next question at once is
never refused for the run it just watched end, though that run's thread still has the save's
last steps to take (an audit checkpoint, say). The next run may wait those moments for a thread.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from application.ports import StoreUnavailableError
from domain.run import Run

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from uuid import UUID

    from application.chat import ChatResult, ChatService
    from domain.values import Budget

log = logging.getLogger(__name__)


class AdmissionRefused(Exception):
    """This worker already executes as many runs as it may; try again shortly."""

    def __init__(self, cap: int, retry_after: int, why: str = "") -> None:
        """Name the cap and when to retry (``why``: another reason than the worker's cap)."""
        why = why or f"this worker already executes its {cap} concurrent runs"
        super().__init__(f"{why}; retry in {retry_after}s")
        self.retry_after = retry_after


@dataclass(frozen=True)
class Started:
    """An admitted run: its identity and the log position of its ``RUN_STARTED``."""

    run_id: UUID
    session_id: str
    position: int


class RunDispatcher:
    """Admits, starts and executes runs in background threads of this process."""

    def __init__(
        self,
        service: ChatService,
        cap: int,
        context_of: Callable[[str], str],
        retry_after: int = 1,
        unsure: Callable[[], str | None] | None = None,
        per_owner: int | None = None,
    ) -> None:
        """Execute at most ``cap`` runs at once; ``context_of(session)`` gives PreviousTurn.

        ``unsure()`` says why this worker should not start runs now (its lease is not being
        renewed, so a recovery sweep could end them); None when it may. ``per_owner``: at most
        that many of the runs may be one owner's (None: no such limit).
        """
        self.service = service
        self.unsure = unsure
        self.cap = cap
        self.per_owner = per_owner
        self._owners: Counter[str] = Counter()
        """Runs executing here, by owner."""
        self.context_of = context_of
        self.retry_after = retry_after
        self._slots = threading.BoundedSemaphore(cap)
        self._pool = ThreadPoolExecutor(cap, thread_name_prefix="harness-run")
        self._running: dict[UUID, Future[ChatResult]] = {}
        self._held: dict[UUID, str] = {}
        """The owner of each admitted run whose slot is not given back yet."""
        self._lock = threading.Lock()
        # First of the store's listeners: the slot is free before the feed hears of the end.
        service.store.listeners.insert(0, self._saved)

    def submit(
        self,
        session_id: str,
        query: str,
        *,
        owner: str = "",
        deadline_s: float | None = None,
        limits: Budget | None = None,
    ) -> Started:
        """Admit, start and hand a run to a thread; refused beyond the cap."""
        why = self.unsure() if self.unsure else None
        if why is not None:
            raise StoreUnavailableError(f"{why}; no run is started here meanwhile")
        self._admit(owner)
        try:
            context = self.context_of(session_id)
            run, position = self.service.begin(
                session_id, query, owner=owner, deadline_s=deadline_s, limits=limits
            )
        except BaseException:
            self._leave(owner)
            raise
        with self._lock:  # registered before its thread can end it and unregister it
            self._held[run.id] = owner
            self._running[run.id] = self._pool.submit(self._execute, run, context)
        return Started(run.id, run.session_id, position)

    def _admit(self, owner: str) -> None:
        """Take a slot for one of ``owner``'s runs, or refuse (the worker's or the owner's cap)."""
        if not self._slots.acquire(blocking=False):
            raise AdmissionRefused(self.cap, self.retry_after)
        with self._lock:
            mine = self._owners[owner]
            if self.per_owner is None or mine < self.per_owner:
                self._owners[owner] += 1
                return
        self._slots.release()
        why = f"{owner} already runs {mine} of this worker's runs, as many as one key may"
        why += " (HARNESS_MAX_RUNS_PER_KEY)"
        raise AdmissionRefused(self.cap, self.retry_after, why)

    def _leave(self, owner: str) -> None:
        with self._lock:
            self._owners[owner] -= 1
            if self._owners[owner] <= 0:
                del self._owners[owner]
        self._slots.release()

    def _execute(self, run: Run, context: str) -> ChatResult:
        try:
            return self.service.execute(run, context)
        finally:
            with self._lock:
                self._running.pop(run.id, None)
            self._free(run.id)  # (if its end was never saved: a failed store, say)

    def _saved(self, events: Sequence[object]) -> None:
        """A store listener: give back the slot of every run of ours whose end was just saved."""
        for event in events:
            if type(event) is Run.RunFinished:
                self._free(event.originator_id)

    def _free(self, run_id: UUID) -> None:
        """Give back ``run_id``'s slot, once (its end saved, or its thread done)."""
        with self._lock:
            if run_id not in self._held:
                return
            owner = self._held.pop(run_id)
        self._leave(owner)

    @property
    def in_flight(self) -> int:
        """Runs this process is executing now."""
        with self._lock:
            return len(self._running)

    def execution(self, run_id: UUID) -> Future[ChatResult] | None:
        """The execution of ``run_id`` while this process runs it: done once its thread is."""
        with self._lock:
            return self._running.get(run_id)

    def executing(self) -> frozenset[UUID]:
        """The ids of the runs this process is executing now (the recovery sweep spares them)."""
        with self._lock:
            return frozenset(self._running)

    def close(self) -> None:
        """Stop taking runs; runs in flight keep their threads until they end."""
        self._pool.shutdown(wait=False)
        listeners = self.service.store.listeners
        if self._saved in listeners:
            listeners.remove(self._saved)
