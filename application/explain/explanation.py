"""``explain_run``: every SPEC §15 question answered for one run, in the table's order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.explain.log import read_streams
from application.explain.model import Answer, BudgetUse, ReplaySummary, RunExplanation
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
from application.whatif.decision import differences
from application.whatif.records import replays_of
from domain.run import Run
from domain.states import BudgetKind

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID

    from application.explain.log import RunStreams
    from application.store import HarnessStore
    from application.whatif.records import RecordedReplay


def explain_run(store: HarnessStore, run_id: UUID) -> RunExplanation:
    """Answer every SPEC §15 question for one run from its events.

    Raises:
        UnknownAggregateError: there is no run with this id.
    """
    log = read_streams(store, run_id)
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
        replays=[_replay(r) for r in replays_of(store, run_id)],
    )


def _replay(found: RecordedReplay) -> ReplaySummary:
    original, replay = found.original, found.replay
    return ReplaySummary(
        number=found.number,
        replayed_at=found.replayed_at,
        changes=found.changes,
        original_outcome=original.outcome,
        original_fallback_type=original.fallback_type,
        outcome=replay.outcome,
        fallback_type=replay.fallback_type,
        differences=differences(original, replay),
    )


def _model_retries(log: RunStreams) -> list[str]:
    """Each retried attempt of a model call, in the harness's words, in the order made."""
    return [
        f"{step.purpose.value} call: attempt {number} failed {attempt.failure.value}"
        + (f" (HTTP {attempt.status})" if attempt.status else "")
        for step in log.of(Run.AgentModelStep)
        for number, attempt in enumerate(step.attempts, start=1)
    ]


_ANSWERS: tuple[Callable[[RunStreams], Answer], ...] = (
    _why_fallback,
    _why_stopped_calling_tools,
    _why_no_evidence,
    _timed_out_or_budget_exhausted,
    _success_without_conclusion,
    _why_no_done,
    _why_no_previous_turn,
)
