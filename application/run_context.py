"""The harness core: one RUNNING run's live handle, its boundaries, deadline and budgets.

Every model, tool and guard boundary goes through :meth:`RunContext.check_active`, which sees the
run's latest state (a cancel may have been appended by another process), times it out when the
deadline has passed, and raises :class:`RunAborted` once the run has a termination (a
:class:`BudgetExhausted` when its budget ran out). Seeing the
latest state costs a read only when nothing cheaper proves it: an append to the run succeeds only
against its latest version, so right after this worker's own append, or right before one, the
event store's optimistic concurrency does the check (a conflicting commit rereads). Every model
call, whatever its purpose or request, is bounded here by the model timeout and the run's
remaining deadline: a blocking provider runs in a worker thread waited for that long at most (an
in-process provider that cannot hang is called inline); a result that arrives after the run ended
is discarded (SPEC §14). What a boundary records is committed before the next call that leaves
the service, at the commit interval, or at the run's end, one transaction for all of them: the
run's :class:`~application.run_journal.RunJournal` (``ctx.journal``) holds the run in hand and
what waits for the log.
"""

from __future__ import annotations

import time
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import suppress
from dataclasses import InitVar, dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from application.deadline import time_left
from application.model_call import model_call
from application.port_calls import PortBusy
from application.ports import (
    ModelError,
    ModelOutputTooLarge,
    ModelTimeoutError,
    ModelUnavailableError,
    StoreUnavailableError,
    gated,
    model_name,
    model_where,
)
from application.run_aborted import BudgetExhausted, RunAborted
from application.run_journal import RunJournal
from application.send_gate import SendGate
from application.storable import storable_response
from domain.redaction import describe_error
from domain.run_steps import text_sha256
from domain.states import MAX_MODEL_OUTPUT_CHARS, BudgetKind, ModelStepOutcome

if TYPE_CHECKING:
    from concurrent.futures import Future
    from uuid import UUID

    from application.port_calls import PortCalls
    from application.ports import Clock, ModelProvider, ModelRequest, ModelResponse
    from application.store import HarnessStore
    from domain.run import Run
    from domain.tool_invocation import ToolInvocation


CANCEL_POLL = 0.5
"""Seconds between looks at the run while a port call is waited for (a cancel ends the wait)."""
MAX_BOUND_S = 86_400.0
"""A bound recorded in a model step is at most a day (an unbounded one would not fit an int)."""

MAX_FINISH_REASON = 64
"""The most characters of a model's finish reason a model step keeps (it is the model's text)."""

T = TypeVar("T")


@dataclass
class RunContext:
    """The live handle of a RUNNING run inside the worker that executes it."""

    store: HarnessStore
    clock: Clock
    provider: ModelProvider
    started: InitVar[Run]
    """The run as this worker took it (then :attr:`run`, held by the journal)."""
    pool: PortCalls
    """Where blocking port calls run (:mod:`application.port_calls`)."""
    model_timeout_s: float
    """The longest any one model call is waited for (HARNESS_MODEL_TIMEOUT), within the deadline."""
    commit_interval_s: InitVar[float] = 0.0
    """The longest the run's queue waits at a local call (HARNESS_RUN_COMMIT_INTERVAL; 0: every
    call commits first). See :mod:`application.run_journal`."""
    invocations: dict[UUID, ToolInvocation] = field(default_factory=dict)
    span_s: float = 0.0
    """The seconds the run had left when this worker took it (the publish reserve is a share)."""
    journal: RunJournal = field(init=False)
    """The run in hand and its way into the log: record, commit (:mod:`application.run_journal`)."""
    _sent_at: float = field(default=0.0, init=False, repr=False)
    """When the current model call could leave (its commit done): its step's latency starts."""

    def __post_init__(self, started: Run, commit_interval_s: float) -> None:
        """Give the run to its journal, which rechecks it here after a lost race."""
        self.journal = RunJournal(self.store, started, self.check_active, commit_interval_s)

    @property
    def run(self) -> Run:
        """The run as this worker knows it (the journal's: a lost race replaces it)."""
        return self.journal.run

    # -- boundaries ------------------------------------------------------------------------------

    def check_active(self, *, reread: bool = True) -> None:
        """Reread the run; time it out past its deadline; raise RunAborted once it has ended.

        ``reread=False`` is for a check followed by an append to the run: that append conflicts
        if another writer (a cancel) came first, and the journal's commit then rereads. While
        events of the run are queued the reread is skipped for the same reason: the next call's
        :meth:`~RunJournal.commit_or_record` commits them, or looks for another writer first (a
        local call).
        """
        journal = self.journal
        if journal.current:
            journal.current = False  # just appended to: no other writer came before that append
        elif reread and not journal.ahead:
            journal.run = self.store.catch_up(journal.run)  # a cancel may come from elsewhere
        if journal.run.termination is None and journal.run.deadline_passed(self.clock.now()):
            journal.commit()  # what the boundaries before recorded, then the end
            self.store.time_out(journal.run.id)
            journal.catch_up()
        if journal.run.termination is not None:
            raise RunAborted.of(journal.run.termination)

    def check_release_window(self) -> None:
        """Like :meth:`check_active`, but a BUDGET_EXHAUSTED run may still release (SPEC §10)."""
        with suppress(BudgetExhausted):
            self.check_active()

    # -- model calls -----------------------------------------------------------------------------

    def call_model(self, request: ModelRequest) -> ModelResponse:
        """One model call at a boundary: budget preflight, bounded wait, usage as an event.

        Raises:
            ModelOutputTooLarge: the answer is over ``MAX_MODEL_OUTPUT_CHARS``; it was recorded
                TOO_LARGE (length and hash) and nothing reads it.
        """
        self.check_active()
        if self.run.would_exceed(BudgetKind.MODEL_CALLS, 1):
            self.run.exhaust_budget(BudgetKind.MODEL_CALLS)
            self.journal.record()
        bound, why = self._bound(request)
        bounded = replace(request, timeout_s=bound)
        try:
            response = storable_response(self._bounded_call(bounded, why))
        except ModelError as error:
            # A model failure after the run ended changes nothing: the deadline is checked here,
            # and a cancel that came meanwhile makes the step's commit conflict and abort.
            self.check_active(reread=False)
            self._record(bounded, ModelStepOutcome.FAILED, error=error)
            raise
        self.check_active(reread=False)  # a late answer is discarded the same way
        text = response.text
        if len(text) > MAX_MODEL_OUTPUT_CHARS:  # refused whole, before anything parses it
            self._record(bounded, ModelStepOutcome.TOO_LARGE, response=response)
            raise ModelOutputTooLarge(len(text), text_sha256(text))
        self._record(bounded, ModelStepOutcome.OK, response=response)
        return response

    def _bound(self, request: ModelRequest) -> tuple[float, str]:
        """The longest to wait for this call, and which limit sets it."""
        left, deadline = self.time_left()
        limits = {"the model timeout": self.model_timeout_s, "the call's own timeout": 0.0}
        limits["the call's own timeout"], limits[deadline] = request.timeout_s, left
        why = min(limits, key=limits.__getitem__)
        return max(0.0, limits[why]), why

    def time_left(self) -> tuple[float, str]:
        """The seconds a port call may still take, and what sets them (:mod:`.deadline`)."""
        journal = self.journal
        collection = journal.collection if journal.collecting else None
        return time_left(self.run.deadline, self.clock.now(), self.span_s, collection)

    def _bounded_call(self, bounded: ModelRequest, why: str) -> ModelResponse:
        """The provider's answer within the model timeout and the run's remaining deadline.

        What the call needs is made durable first, unless it stays here (design §17.1). The
        bound holds whatever the request says (its ``timeout_s`` may only tighten it), and
        the provider is handed the bound in ``timeout_s`` so one that can stop itself (an HTTP
        client) stops when the wait does. A provider that is not blocking only computes in
        process (the offline model: no I/O, no sleep), so it is called inline, with nothing
        there that could wait past the bound. A ``gated`` one is handed the call before the
        commit and sends it once the commit succeeded (:mod:`application.send_gate`).
        """
        bound = bounded.timeout_s
        self._sent_at = time.monotonic()  # a call refused before it could leave took no time
        if not self.provider.blocking:
            self.journal.commit_or_record(before=self.provider)
            self._sent_at = time.monotonic()
            return self.provider.complete(bounded)  # cannot hang: no watchdog thread needed
        gate = SendGate() if gated(self.provider) else None
        if gate is None:
            self.journal.commit_or_record(before=self.provider)
            self._sent_at = time.monotonic()
        try:
            future = self.pool.submit(
                model_where(self.provider), self.provider.complete, replace(bounded, send_gate=gate)
            )
        except PortBusy as busy:  # earlier calls still hang: refused, not queued
            raise ModelUnavailableError(str(busy)) from None
        if gate is not None:
            self._commit_then_open(gate, future)
        try:
            return self.wait_for(future, bound)
        except FutureTimeout:  # not promised to stop; its result is discarded (SPEC §5)
            self.check_active()  # the deadline may have passed: TIMED_OUT
            raise ModelTimeoutError(f"no answer within {bound:.1f}s ({why})") from None

    def _commit_then_open(self, gate: SendGate, future: Future[ModelResponse]) -> None:
        """Commit what the call needs while it is built; let it leave only if that succeeded."""
        try:
            self.journal.commit_or_record(before=self.provider)
        except BaseException:
            gate.refuse()  # the request never leaves; the call ends at its gate, at once
            with suppress(FutureTimeout, CancelledError):
                future.exception(timeout=CANCEL_POLL)  # so it is not logged as abandoned
            self.pool.abandon(future)
            raise
        self._sent_at = time.monotonic()
        gate.open()

    def wait_for(self, future: Future[T], timeout: float) -> T:
        """The result of a port call running in another thread, waited for at most ``timeout``.

        The wait looks at the run every :data:`CANCEL_POLL` seconds: once it has ended (a cancel
        from any process, say) :class:`RunAborted` is raised, so a run whose port hangs finishes
        at once. A wait that ends without the result abandons the call to :attr:`pool`.
        """
        try:
            return self._wait(future, time.monotonic() + timeout)
        except BaseException:
            self.pool.abandon(future)
            raise

    def _wait(self, future: Future[T], end: float) -> T:
        while True:
            try:
                return future.result(timeout=max(0.0, min(CANCEL_POLL, end - time.monotonic())))
            except FutureTimeout:
                if time.monotonic() >= end:
                    raise
            self._look()  # RunAborted when a commit of the queue meets a cancel
            if self.run.termination is not None:
                raise RunAborted.of(self.run.termination)

    def _look(self) -> None:
        """While a port call is waited for: commit what waits (a slow local call), see the run.

        A cancel makes that commit conflict (:class:`RunAborted`). A store that refuses it gets
        the events back in the queue, for the run's next commit to meet the outage with.
        """
        if self.journal.ahead:
            try:
                self.journal.commit()
            except StoreUnavailableError:
                self.journal.requeue_refused()
                return
        self.journal.catch_up()

    def _record(
        self,
        request: ModelRequest,
        outcome: ModelStepOutcome,
        response: ModelResponse | None = None,
        error: ModelError | None = None,
    ) -> None:
        usage = response.usage if response else None
        self.run.record_model_step(
            request.purpose,
            tokens_in=max(0, usage.tokens_in) if usage else 0,
            tokens_out=max(0, usage.tokens_out) if usage else 0,
            latency_ms=int((time.monotonic() - self._sent_at) * 1000),
            outcome=outcome,
            detail=describe_error(error) if error is not None else "",
            bound_ms=int(min(request.timeout_s, MAX_BOUND_S) * 1000),
            provider=self.provider.name,
            model=model_name(self.provider),
            finish_reason=response.finish_reason[:MAX_FINISH_REASON] if response else "",
            answer=response.text if response else "",
            attempts=response.attempts if response else error.attempts if error else (),
            call=model_call(self.provider, request, outcome, response, error),
        )
        self.journal.record()


__all__ = [
    "CANCEL_POLL",
    "MAX_BOUND_S",
    "MAX_FINISH_REASON",
    "BudgetExhausted",
    "RunAborted",
    "RunContext",
]
