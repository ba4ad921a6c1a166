"""Ending a run whose event store failed mid-run, as soon as the store answers again.

A save that failed has already taken the pending events out of the aggregates and applied them
in memory, so what the worker holds may be ahead of the log: closing the run from it would
record an end the log cannot replay. The run is read again instead. Tool invocations it left
open are closed as ABANDONED (their results were never recorded), and the run ends FAILED
(INTERNAL_ERROR), or TIMED_OUT when its deadline has passed meanwhile, unless another writer
ended it first. While the store is still away this is tried again with a growing pause, for at
most :data:`OUTAGE_WAIT` seconds; then the error is raised and the run is left RUNNING for the
recovery sweep.
"""

from __future__ import annotations

import logging
import time
from contextlib import suppress
from typing import TYPE_CHECKING, TypeVar

from application.ports import StoreUnavailableError
from domain.errors import ConcurrentWriteError, UnknownAggregateError
from domain.tool_states import InvocationStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from application.ports import Clock
    from application.run_context import RunContext

log = logging.getLogger(__name__)

T = TypeVar("T")

OUTAGE_WAIT = 60.0
"""Seconds a run whose store failed keeps trying to record its end before giving up."""
FIRST_PAUSE = 0.25
LONGEST_PAUSE = 2.0


def end_after_outage(
    ctx: RunContext, clock: Clock, error: StoreUnavailableError, close: Callable[[], T]
) -> T:
    """Record the end of ``ctx``'s run once the store answers; ``close()`` records it."""
    log.warning("run %s: the event store failed (%s); ending the run", ctx.run.id, error)
    give_up, pause = time.monotonic() + OUTAGE_WAIT, FIRST_PAUSE
    while True:
        try:
            resync(ctx)
            if ctx.run.termination is None and ctx.run.deadline_passed(clock.now()):
                ctx.store.time_out(ctx.run.id)
                ctx.journal.reload()
            return close()
        except StoreUnavailableError:
            if time.monotonic() + pause > give_up:
                raise
        time.sleep(pause)  # the store is still away: try again shortly
        pause = min(2 * pause, LONGEST_PAUSE)


def resync(ctx: RunContext) -> None:
    """Read ``ctx``'s run back from the log and close the invocations it left open.

    After a save failed for any reason, the events it collected are gone from the aggregates
    but applied in memory: recording more from there would skip versions the log never got.
    """
    ctx.journal.reload()
    _abandon_open_invocations(ctx)


def _abandon_open_invocations(ctx: RunContext) -> None:
    """Close, as stored, every invocation of the run whose result was never recorded."""
    for key in ctx.invocations:
        try:
            invocation = ctx.store.get_invocation(key)
        except UnknownAggregateError:
            continue  # its begin was never stored either
        if invocation.status is not InvocationStatus.PROJECTING:
            continue
        invocation.fail("ABANDONED", "the event store failed before the result was recorded")
        with suppress(ConcurrentWriteError):  # another writer closed it meanwhile
            ctx.store.save_all(invocation)
