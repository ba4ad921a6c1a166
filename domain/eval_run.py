"""The EvalRun aggregate: one evaluation (``harness eval``) as the log records it.

An evaluation runs its cases in stores of their own; what it found is recorded here afterwards,
in the harness's log: ``EVAL_STARTED`` (suite, model, the settings that shaped the answers, how
many cases), one ``EVAL_CASE_SCORED`` per case (every :class:`~domain.evals.CaseResult` field)
and ``EVAL_FINISHED`` (the totals, counted by the aggregate from the cases it holds). Not part
of any run's timeline. Bad values are refused before anything is recorded.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, NoReturn

from eventsourcing.domain import Aggregate

from domain.errors import IllegalTransitionError, InvalidCommandError
from domain.evals import CaseResult, EvalReport, Totals, Verdict, totals

if TYPE_CHECKING:
    from datetime import datetime
    from uuid import UUID

MAX_NAME = 500
"""The longest suite, model, case id or setting name recorded (text of one line)."""
MAX_COUNT = 2**31 - 1
"""The most tokens, model calls or milliseconds one case may record (what an int4 holds)."""
MAX_CASES = 100_000
"""The most cases one evaluation may hold (so its totals stay far inside a 64-bit integer)."""
COUNTS = ("tokens", "model_calls", "latency_ms")
RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(CaseResult))
"""What ``EVAL_CASE_SCORED`` carries: every field of a case's result."""


class EvalRun(Aggregate):
    """One evaluation: started, its cases scored one by one, finished with its totals."""

    class EvalStarted(Aggregate.Created):
        """An evaluation of ``cases`` cases of ``suite`` against ``model`` began."""

        class_version = 1
        suite: str
        model: str
        settings: dict[str, str]
        """What shaped the answers (model, provider, timeouts, budgets, tools), never a secret."""
        started_at: datetime
        cases: int

        def apply(self, aggregate: EvalRun) -> None:
            """Record what is evaluated."""
            aggregate.suite = self.suite
            aggregate.model = self.model
            aggregate.settings = dict(self.settings)
            aggregate.started_at = self.started_at
            aggregate.cases = self.cases

    class EvalCaseScored(Aggregate.Event):
        """One case ran and was scored: its verdict and what its run used."""

        class_version = 1
        case_id: str
        question: str
        verdict: Verdict
        published_wrong: bool
        reasons: tuple[str, ...]
        run_id: str | None
        state: str
        release: str | None
        fallback_type: str | None
        tokens: int
        model_calls: int
        latency_ms: int

        def apply(self, aggregate: EvalRun) -> None:
            """Add the case's result."""
            fields = {name: getattr(self, name) for name in RESULT_FIELDS}
            fields["reasons"] = tuple(self.reasons)  # a JSON array may come back as a list
            aggregate.results = (*aggregate.results, CaseResult(**fields))

    class EvalFinished(Aggregate.Event):
        """Every case was scored: the evaluation's end and its totals."""

        class_version = 1
        finished_at: datetime
        cases: int
        correct: int
        fallback: int
        wrong: int
        published_wrong: int
        tokens: int
        model_calls: int
        latency_ms: int

        def apply(self, aggregate: EvalRun) -> None:
            """Close the evaluation."""
            aggregate.finished_at = self.finished_at

    def __init__(self) -> None:
        """Fields are assigned by the events' ``apply`` methods."""
        self.suite = ""
        self.model = ""
        self.settings: dict[str, str] = {}
        self.started_at: datetime
        self.cases = 0
        self.results: tuple[CaseResult, ...] = ()
        self.finished_at: datetime | None = None

    @classmethod
    def start(
        cls,
        eval_id: UUID,
        suite: str,
        model: str,
        settings: dict[str, str],
        started_at: datetime,
        cases: int,
    ) -> EvalRun:
        """Begin recording an evaluation of ``cases`` cases (``EVAL_STARTED``)."""
        check = _Checks(eval_id)
        check.name("suite", suite)
        check.name("model", model)
        check.settings(settings)
        check.aware("started_at", started_at)
        check.count("cases", cases, MAX_CASES)
        return cls._create(
            cls.EvalStarted,
            id=eval_id,
            suite=suite,
            model=model,
            settings=dict(settings),
            started_at=started_at,
            cases=cases,
        )

    @classmethod
    def of_report(cls, report: EvalReport) -> EvalRun:
        """The whole evaluation of ``report``: started, every case scored, finished."""
        run = cls.start(
            report.eval_id,
            report.suite,
            report.model,
            report.settings,
            report.started_at,
            len(report.results),
        )
        for result in report.results:
            run.score(result)
        run.finish(report.finished_at)
        return run

    @property
    def is_finished(self) -> bool:
        """Whether ``EVAL_FINISHED`` was recorded."""
        return self.finished_at is not None

    @property
    def totals(self) -> Totals:
        """The counts over the cases scored so far."""
        return totals(self.results)

    def report(self) -> EvalReport:
        """The evaluation as :class:`EvalReport` (once finished)."""
        if self.finished_at is None:
            raise IllegalTransitionError(self.id, f"eval {self.id!r} has not finished")
        return EvalReport(
            self.id,
            self.suite,
            self.model,
            dict(self.settings),
            self.started_at,
            self.finished_at,
            self.results,
        )

    def score(self, result: CaseResult) -> None:
        """Record one case's result (``EVAL_CASE_SCORED``); each case once, up to ``cases``."""
        self._check_open()
        if len(self.results) >= self.cases:
            why = f"all {self.cases} case(s) were scored already; {result.case_id!r} is one more"
            raise IllegalTransitionError(self.id, f"eval {self.id!r}: {why}")
        if any(r.case_id == result.case_id for r in self.results):
            raise IllegalTransitionError(
                self.id, f"eval {self.id!r}: case {result.case_id!r} was scored already"
            )
        _Checks(self.id).result(result)
        fields = {name: getattr(result, name) for name in RESULT_FIELDS}
        self.trigger_event(self.EvalCaseScored, **{**fields, "reasons": tuple(result.reasons)})

    def finish(self, finished_at: datetime) -> None:
        """Close the evaluation with its totals (``EVAL_FINISHED``) once every case is scored."""
        self._check_open()
        check = _Checks(self.id)
        check.aware("finished_at", finished_at)
        if finished_at < self.started_at:
            check.refuse(f"finished_at {finished_at.isoformat()} is before its start")
        if len(self.results) != self.cases:
            raise IllegalTransitionError(
                self.id, f"eval {self.id!r}: {len(self.results)} of {self.cases} case(s) scored"
            )
        counted = vars(self.totals)
        self.trigger_event(self.EvalFinished, finished_at=finished_at, **counted)

    def _check_open(self) -> None:
        if self.finished_at is not None:
            raise IllegalTransitionError(self.id, f"eval {self.id!r} has finished already")


class _Checks:
    """The value checks of one evaluation's commands; each refusal names the eval and the field."""

    def __init__(self, eval_id: UUID) -> None:
        self.eval_id = eval_id

    def refuse(self, why: str) -> NoReturn:
        raise InvalidCommandError(self.eval_id, f"eval {self.eval_id!r}: {why}")

    def name(self, field: str, value: object) -> None:
        """Text of one line: not blank, no control characters, at most :data:`MAX_NAME`."""
        if type(value) is not str or not value.strip():
            self.refuse(f"{field} must be non-blank text, not {value!r:.80}")
        assert isinstance(value, str)
        if len(value) > MAX_NAME or not value.isprintable():
            self.refuse(f"{field} must be one printable line of at most {MAX_NAME} characters")

    def text(self, field: str, value: object) -> None:
        if type(value) is not str:
            self.refuse(f"{field} must be text, not {type(value).__name__}")

    def optional(self, field: str, value: object) -> None:
        if value is not None:
            self.name(field, value)

    def count(self, field: str, value: object, most: int = MAX_COUNT) -> None:
        if type(value) is not int or not 0 <= value <= most:
            self.refuse(f"{field} must be a count from 0 to {most}, not {value!r:.80}")

    def aware(self, field: str, value: Any) -> None:
        if getattr(value, "tzinfo", None) is None or value.utcoffset() is None:
            self.refuse(f"{field} must be a timezone-aware time, not {value!r:.80}")

    def settings(self, settings: object) -> None:
        if not isinstance(settings, dict):
            self.refuse(f"settings must map names to text, not {type(settings).__name__}")
        assert isinstance(settings, dict)
        for name, value in settings.items():
            self.name("a setting's name", name)
            self.text(f"setting {name!r}", value)

    def result(self, result: CaseResult) -> None:
        """Every field of a case's result as :class:`CaseResult` declares it."""
        self.name("case_id", result.case_id)
        self.text("question", result.question)
        if not isinstance(result.verdict, Verdict):
            self.refuse(f"case {result.case_id!r}: verdict {result.verdict!r:.40} is no Verdict")
        if type(result.published_wrong) is not bool:
            self.refuse(f"case {result.case_id!r}: published_wrong must be True or False")
        if result.published_wrong and result.verdict is not Verdict.WRONG:
            self.refuse(f"case {result.case_id!r}: only a wrong answer is published-and-wrong")
        if not isinstance(result.reasons, tuple | list):
            self.refuse(f"case {result.case_id!r}: reasons must be a list of text")
        for reason in result.reasons:
            self.text(f"case {result.case_id!r}: a reason", reason)
        self.name("state", result.state)
        for field in ("run_id", "release", "fallback_type"):
            self.optional(f"case {result.case_id!r}: {field}", getattr(result, field))
        for field in COUNTS:
            self.count(f"case {result.case_id!r}: {field}", getattr(result, field))
