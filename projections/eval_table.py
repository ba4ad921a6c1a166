"""``eval_run`` and ``eval_case``: every evaluation recorded in the log, and each of its cases.

An ``EVAL_STARTED`` adds the evaluation's row; each ``EVAL_CASE_SCORED`` adds a case row
(numbered in scoring order) and counts it into the evaluation's totals; ``EVAL_FINISHED`` sets
its end. The totals are counted here from the cases, not copied from ``EVAL_FINISHED``, so a
row shows what the cases add up to even before the evaluation finished (the aggregate refuses a
finish whose totals would differ).
"""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING

from application.view_port import jsonable
from domain.eval_run import COUNTS, EvalRun
from domain.evals import Verdict
from projections.base import Positioned, Written, begun_before

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.view_port import Row, RowCache, ViewWriter

VERDICT_COLUMNS = {Verdict.CORRECT: "correct", Verdict.FALLBACK: "fallback", Verdict.WRONG: "wrong"}


class EvalTable:
    """One row per evaluation and one per case, from the ``EvalRun`` streams."""

    name = "eval_run"
    tables = ("eval_run", "eval_case")
    interests = (EvalRun.Event,)

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        """Add the evaluations started, their cases scored, and the ends of those finished."""
        runs = view.rows("eval_run", "eval_id")
        runs.preload(begun_before(events, EvalRun.Event, EvalRun.EvalStarted))
        cases: list[Row] = []
        for position, event, stream in events:
            row = self._apply(runs, event, stream, cases)
            if row is not None:
                row["last_position"] = position
        return Written(runs.flush() + view.insert("eval_case", cases))

    def _apply(self, runs: RowCache, event: object, eval_id: str, cases: list[Row]) -> Row | None:
        if isinstance(event, EvalRun.EvalStarted):
            return runs.add(_new_row(eval_id, event))
        row = runs.get(eval_id)
        if row is None:
            return None  # the evaluation's start was never seen: nothing to attach this to
        if isinstance(event, EvalRun.EvalCaseScored):
            row["scored"] += 1
            _count(row, event)
            cases.append(_case_row(eval_id, row["scored"], event))
        elif isinstance(event, EvalRun.EvalFinished):
            row["finished_at"] = event.finished_at.astimezone(UTC)
        return row


def _new_row(eval_id: str, event: EvalRun.EvalStarted) -> Row:
    return {
        "eval_id": eval_id,
        "suite": event.suite,
        "model": event.model,
        "settings": jsonable(event.settings),
        "started_at": event.started_at.astimezone(UTC),  # SQLite keeps no zone
        "finished_at": None,
        "cases": event.cases,
        "scored": 0,
        **dict.fromkeys(VERDICT_COLUMNS.values(), 0),
        "published_wrong": 0,
        **dict.fromkeys(COUNTS, 0),
        "last_position": 0,
    }


def _count(row: Row, event: EvalRun.EvalCaseScored) -> None:
    row[VERDICT_COLUMNS[event.verdict]] += 1
    row["published_wrong"] += int(event.published_wrong)
    for name in COUNTS:
        row[name] += getattr(event, name)


def _case_row(eval_id: str, seq: int, event: EvalRun.EvalCaseScored) -> Row:
    return {
        "eval_id": eval_id,
        "case_id": event.case_id,
        "seq": seq,
        "question": event.question,
        "verdict": event.verdict.value,
        "published_wrong": event.published_wrong,
        "reasons": list(event.reasons),
        "run_id": event.run_id,
        "state": event.state,
        "release": event.release,
        "fallback_type": event.fallback_type,
        **{name: getattr(event, name) for name in COUNTS},
    }
