"""``explain_run``: every SPEC §15 question answered for one run, in the table's order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.explain.log import _read
from application.explain.model import Answer, BudgetUse, RunExplanation
from application.explain.what_client_saw import (
    _success_without_conclusion,
    _why_no_done,
    _why_no_previous_turn,
)
from application.explain.why_ended import (
    _timed_out_or_budget_exhausted,
    _why_fallback,
    _why_no_evidence,
    _why_stopped_calling_tools,
)
from application.explain.words import _fallback_type, _v
from domain.run import Run
from domain.states import BudgetKind

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID

    from application.explain.log import _Log
    from application.store import HarnessStore


def explain_run(store: HarnessStore, run_id: UUID) -> RunExplanation:
    """Answer every SPEC §15 question for one run from its events.

    Raises:
        UnknownAggregateError: there is no run with this id.
    """
    log = _read(store, run_id)
    run, term, finished = log.run, log.run.termination, log.last(Run.RunFinished)
    return RunExplanation(
        run_id=run.id,
        session_id=run.session_id,
        query=run.query,
        intent=_v(run.intent),
        finished=run.is_finished,
        release_outcome=_v(run.finished_outcome),
        fallback_type=_v(_fallback_type(run)),
        termination_state=_v(term.state if term else None),
        termination_reason=_v(term.reason if term else None),
        failure_cause=run.failure_cause or None,
        stop_reason=_v(log.stop_reason),
        duration_ms=finished.duration_ms if finished else None,
        budget=[
            BudgetUse(kind=k.value, used=run.usage.get(k), limit=run.limits.get(k))
            for k in BudgetKind
        ],
        answers=[answer(log) for answer in _ANSWERS],
        model_retries=_model_retries(log),
    )


def _model_retries(log: _Log) -> list[str]:
    """Each retried attempt of a model call, in the harness's words, in the order made."""
    return [
        f"{step.purpose.value} call: attempt {number} failed {attempt.failure.value}"
        + (f" (HTTP {attempt.status})" if attempt.status else "")
        for step in log.of(Run.AgentModelStep)
        for number, attempt in enumerate(step.attempts, start=1)
    ]


_ANSWERS: tuple[Callable[[_Log], Answer], ...] = (
    _why_fallback,
    _why_stopped_calling_tools,
    _why_no_evidence,
    _timed_out_or_budget_exhausted,
    _success_without_conclusion,
    _why_no_done,
    _why_no_previous_turn,
)
