"""Evaluations in the log: ``record_eval`` appends one, ``load_eval`` reads one back from it.

``harness eval`` runs each case in a store of its own; the evaluation as a whole is recorded in
the harness's log afterwards (:class:`~domain.eval_run.EvalRun`), in one transaction, and
projected into ``eval_run`` and ``eval_case`` (``projections.eval_table``), where the console's
Overview, ``GET /v1/evals`` and ``harness eval list`` / ``compare`` read it
(``projections.eval_queries``). What is recorded is made storable first (no NUL, no lone
surrogate) and its settings redacted (a credential-named setting, a URL's password, a Bearer
token): the settings are meant to hold no secret, and the log is exported to auditors.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from application.storable import storable_text
from domain.errors import ConcurrentWriteError, IllegalTransitionError, UnknownAggregateError
from domain.eval_run import RESULT_FIELDS, EvalRun
from domain.evals import CaseResult
from domain.redactor import Redactor

if TYPE_CHECKING:
    from uuid import UUID

    from application.store import HarnessStore
    from domain.evals import EvalReport


def record_eval(store: HarnessStore, report: EvalReport, redactor: Redactor | None = None) -> UUID:
    """Record ``report`` in ``store``'s log (one transaction); its eval id.

    ``redactor`` (default: credential shapes only) hides secrets in the settings. Raises
    :class:`~domain.errors.InvalidCommandError` naming the field for a bad value and
    :class:`~domain.errors.IllegalTransitionError` when this eval id was recorded already;
    nothing is appended then.
    """
    evaluation = EvalRun.of_report(fit_for_the_log(report, redactor or Redactor()))
    try:
        store.save_events(list(evaluation.collect_events()))
    except ConcurrentWriteError as conflict:
        raise IllegalTransitionError(
            report.eval_id, f"eval {report.eval_id} was recorded already: record it once"
        ) from conflict
    return evaluation.id


def load_eval(store: HarnessStore, eval_id: UUID) -> EvalReport:
    """The evaluation as the log holds it; :class:`UnknownAggregateError` if there is none."""
    events = store.stream(eval_id)
    if not events or not isinstance(events[0], EvalRun.EvalStarted):
        raise UnknownAggregateError(eval_id, f"no eval {eval_id} in the log")
    evaluation: EvalRun | None = None
    for event in events:
        evaluation = event.mutate(evaluation)
    assert evaluation is not None
    return evaluation.report()


def fit_for_the_log(report: EvalReport, redactor: Redactor) -> EvalReport:
    """``report`` with storable text everywhere and its settings' secrets redacted."""
    settings: Any = report.settings
    if isinstance(settings, dict):  # anything else is the aggregate's to refuse
        redacted: dict[Any, Any] = redactor.json(settings)[0]  # type: ignore[assignment]
        settings = {_text(key): _text(value) for key, value in redacted.items()}
    return replace(
        report,
        suite=_text(report.suite),
        model=_text(report.model),
        settings=settings,
        results=tuple(_storable(result) for result in report.results),
    )


def _storable(result: CaseResult) -> CaseResult:
    fields = {name: _text(getattr(result, name)) for name in RESULT_FIELDS}
    return CaseResult(**fields)


def _text(value: Any) -> Any:
    """Text made storable (in a list too); any other value as it is, for the checks to judge."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list | tuple):
        return tuple(_text(item) for item in value)
    return value
