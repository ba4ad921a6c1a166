"""A recorded run's handle for its release to run again, recording on a copy of the run.

The copy is the run rebuilt from its events up to its release: the release's commands record on
it as they did on the live run, and its new events stay pending on it, never saved as the run's
(the replay summarises them in a stream of its own). No deadline applies (the run's is long
past) and nothing else writes to the copy; budgets hold as they did, so a judge call the run's
budget cannot pay for ends the copy BUDGET_EXHAUSTED, as it would have ended the run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from application.ports import ModelError, ModelOutputTooLarge
from application.run_aborted import RunAborted
from domain.redaction import describe_error
from domain.run import Run
from domain.states import BudgetKind, ModelStepOutcome

if TYPE_CHECKING:
    from collections.abc import Mapping
    from uuid import UUID

    from application.ports import ModelRequest, ModelResponse
    from application.release_context import InvocationSource
    from application.whatif.answers import Answered, Answers
    from domain.collection import Collection
    from domain.tool_invocation import ToolInvocation


@dataclass
class ReplayJournal:
    """Takes the copy's events; raises RunAborted when they ended it, as a commit does."""

    run: Run
    collection: Collection | None
    seen: int = 0

    def record(self) -> None:
        """Look at what the copy recorded since the last boundary."""
        pending = self.run.pending_events
        new, self.seen = pending[self.seen :], len(pending)
        ended = any(isinstance(e, Run.RunTerminated) for e in new)
        if ended and self.run.termination is not None:
            raise RunAborted.of(self.run.termination)


@dataclass
class ReplayContext:
    """A recorded run as release sees it (:class:`~application.release_context.ReleaseContext`)."""

    journal: ReplayJournal
    invocations: Mapping[UUID, ToolInvocation]
    store: InvocationSource
    answers: Answers
    answered: list[Answered] = field(default_factory=list)

    @property
    def run(self) -> Run:
        """The copy of the run the release records on."""
        return self.journal.run

    def check_active(self, *, reread: bool = True) -> None:
        """RunAborted once the copy has ended (BudgetExhausted: the release window stays open)."""
        del reread  # nothing but this replay writes to the copy
        if self.run.termination is not None:
            raise RunAborted.of(self.run.termination)

    def call_model(self, request: ModelRequest) -> ModelResponse:
        """The recorded (or newly asked) answer, charged and recorded as the live call was."""
        self.check_active()
        if self.run.would_exceed(BudgetKind.MODEL_CALLS, 1):
            self.run.exhaust_budget(BudgetKind.MODEL_CALLS)
            self.journal.record()
        started = time.monotonic()
        try:
            found = self.answers.answer(request)
        except ModelOutputTooLarge:
            raise  # refused whole, as the run recorded it: the caller records the refusal
        except ModelError as error:
            self._record(request, ModelStepOutcome.FAILED, started, None, describe_error(error))
            raise
        self.answered.append(found)
        self._record(request, ModelStepOutcome.OK, started, found, "")
        return found.response

    def _record(
        self,
        request: ModelRequest,
        outcome: ModelStepOutcome,
        started: float,
        found: Answered | None,
        detail: str,
    ) -> None:
        step: Any = found.step if found is not None else None
        usage = found.response.usage if found is not None else None
        self.run.record_model_step(
            request.purpose,
            tokens_in=max(0, usage.tokens_in) if usage else 0,
            tokens_out=max(0, usage.tokens_out) if usage else 0,
            latency_ms=step.latency_ms if step else int((time.monotonic() - started) * 1000),
            outcome=outcome,
            detail=detail,
            provider="replay",
            model=found.source if found is not None else "",
            answer=found.response.text if found is not None else "",
        )
        self.journal.record()
