"""Threads for the port calls a run waits for: a call that never returns holds nobody else's.

A blocking port call (a model request, a tool's argument check or run) runs in a thread of the
pool while the run waits for it within its bound
(:meth:`~application.run_context.RunContext.wait_for`).
When the wait ends first (the deadline, a cancel) the call is *abandoned*: its thread is left to
finish on its own and its result, whenever it comes, is dropped. A pool of a fixed few threads
would let a handful of such calls (a tool server that accepts and never answers) take every
thread, and every later call of every run, model calls included, would queue behind them until
its own deadline. Here nothing queues: a call goes to a thread that is idle, or to a new one
when none is (starting a thread cost 2-4 ms a call under load, so finished threads wait
``idle_s`` for the next call before they end); threads are daemons, so a hung call never keeps
the process from exiting. Each port (the model, each tool by name) may leave at most
``max_stuck`` abandoned calls running that have run ``stuck_after`` seconds or more (a call a
cancel abandoned usually answers soon after): beyond that, that port is not asked again until
one of them returns (:class:`PortBusy`), while every other port is asked as usual.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MAX_STUCK = 16
"""Abandoned calls of one port still running before it is refused (HARNESS_MAX_STUCK_CALLS)."""
IDLE_S = 30.0
"""Seconds a thread waits for its next call before it ends."""
DEFAULT_STUCK_AFTER = 60.0
"""Seconds an abandoned call must have run to count as stuck (HARNESS_STUCK_AFTER): a call
abandoned by a cancel usually answers soon after, and one user cancelling many runs must not
make the port refuse everyone's calls."""


class PortBusy(Exception):
    """The port already has as many abandoned calls still running as it may: not asked now."""

    def __init__(self, port: str, stuck: int) -> None:
        """Name the port and how many of its calls are stuck."""
        super().__init__(
            f"{port} was not asked: {stuck} of its earlier calls never answered and are still"
            " running (HARNESS_MAX_STUCK_CALLS); it is asked again once one of them returns"
        )
        self.port = port


class PortCalls:
    """Runs blocking port calls in daemon threads, never queued; counts abandoned ones per port."""

    def __init__(
        self,
        max_stuck: int = DEFAULT_MAX_STUCK,
        stuck_after: float = DEFAULT_STUCK_AFTER,
        idle_s: float = IDLE_S,
    ) -> None:
        """At most ``max_stuck`` abandoned calls of one port, running ``stuck_after`` s or more."""
        self.max_stuck = max_stuck
        self.stuck_after = stuck_after
        self.idle_s = idle_s
        self._started: dict[Future[Any], float] = {}
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._owner: dict[Future[Any], str] = {}
        """The port of every call still running."""
        self._abandoned: set[Future[Any]] = set()
        self._closed = False
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        """Calls handed to idle threads (``None`` tells one to end)."""
        self._idle = 0
        """Threads waiting for a call, less the calls queued for them: put only while > 0."""

    def submit(self, port: str, call: Callable[..., T], *args: Any) -> Future[T]:
        """Start ``call(*args)`` for ``port`` in a thread; PortBusy when it has too many stuck."""
        future: Future[T] = Future()
        job = _Job(port, future, call, args)
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot call a port after the service has shut down")
            stuck = self._stuck(port)
            if stuck >= self.max_stuck:
                raise PortBusy(port, stuck)
            self._owner[future] = port
            self._started[future] = time.monotonic()
            if self._idle > 0:
                self._idle -= 1
                self._jobs.put(job)  # under the lock: an idle thread ending looks for it
                return future
            thread = threading.Thread(target=self._serve, args=(job,), daemon=True)
            self._threads.add(thread)
        thread.start()
        return future

    def abandon(self, future: Future[Any]) -> None:
        """The caller stopped waiting: the call, if still running, is stuck until it returns."""
        future.cancel()
        with self._lock:
            if future in self._owner and not future.done():
                self._abandoned.add(future)
                log.warning("a call to %s was abandoned still running", self._owner[future])

    def stuck(self) -> Counter[str]:
        """The stuck calls (abandoned, running ``stuck_after`` s or more), by port."""
        with self._lock:
            return Counter(self._owner[f] for f in self._abandoned if self._long(f))

    def _stuck(self, port: str) -> int:
        return sum(1 for f in self._abandoned if self._owner[f] == port and self._long(f))

    def _long(self, future: Future[Any]) -> bool:
        return time.monotonic() - self._started[future] >= self.stuck_after

    def _serve(self, job: _Job | None) -> None:
        """Run calls, the first one given, then each one handed over, until idle too long."""
        try:
            while job is not None:
                self._work(job)
                job = self._next()
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _next(self) -> _Job | None:
        """The next call for this thread, or None when it is to end (idle ``idle_s``, shut)."""
        with self._lock:
            if self._closed:
                return None
            self._idle += 1
        try:
            return self._jobs.get(timeout=self.idle_s)
        except queue.Empty:
            with self._lock:  # a call put for this thread as it timed out is taken, not lost
                try:
                    return self._jobs.get_nowait()
                except queue.Empty:
                    self._idle -= 1
                    return None

    def _work(self, job: _Job) -> None:
        future = job.future
        threading.current_thread().name = f"port {job.port}"
        try:
            if future.set_running_or_notify_cancel():
                try:
                    result = job.call(*job.args)
                except BaseException as error:  # handed to the waiter, if any is left
                    future.set_exception(error)
                else:
                    future.set_result(result)  # dropped when nobody waits any more
        finally:
            with self._lock:
                self._owner.pop(future, None)
                self._started.pop(future, None)
                self._abandoned.discard(future)

    def shutdown(self, wait: bool = True) -> None:
        """Take no more calls; with ``wait``, join the calls still running (late ones too)."""
        with self._lock:
            self._closed = True
            for _ in range(self._idle):
                self._jobs.put(None)  # each idle thread ends at once
            self._idle = 0
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()


@dataclass(frozen=True)
class _Job:
    """One call for a thread: the port it is for, where its result goes, the call."""

    port: str
    future: Future[Any]
    call: Callable[..., Any]
    args: tuple[Any, ...]
