"""What an evaluation case expects and how one answer is scored against it (``harness eval``).

A case is a question and what a right answer holds: the facts that must be cited or stated
(``must``: each text must occur in what was published — the statement, its facts or the excerpts
they cite — compared case-insensitively after :func:`domain.grounding.normalise`) and the facts that
must not (``must_not``). A case may instead expect a fallback (a question the harness cannot
answer from its evidence), optionally of one type.

Every answer gets one :class:`Verdict`:

- ``CORRECT``: it is what the case expects: a published answer, or the fallback the case
  expects, holding every ``must`` and no ``must_not``.
- ``FALLBACK``: the harness published a safe fallback where the case expected an answer: not
  right, but never misleading.
- ``WRONG``: anything else. ``published_wrong`` marks the wrong answers that were *published*
  as a conclusion or an answer: the number that matters most to an operator (an answer given with
  confidence, and wrong). A fallback of another type than expected is wrong but not published.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime  # noqa: TC003 - a field's type
from enum import Enum
from uuid import UUID  # noqa: TC003 - a field's type

from domain.grounding import normalise


class Expected(Enum):
    """What kind of ending a case expects."""

    CONCLUSION = "conclusion"
    """A published diagnosis (release PUBLISHED)."""
    ANSWER = "answer"
    """A published knowledge answer."""
    FALLBACK = "fallback"
    """A safe fallback (of ``fallback_type`` when given)."""


class Verdict(Enum):
    """How one answer scored against its case."""

    CORRECT = "correct"
    FALLBACK = "fallback"
    WRONG = "wrong"


@dataclass(frozen=True)
class Expectation:
    """What a right answer to a case is."""

    outcome: Expected
    must: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()
    fallback_type: str | None = None
    """A :class:`~domain.release_states.FallbackType` value, when one type is expected."""


@dataclass(frozen=True)
class Answer:
    """What a run published, as scoring needs it."""

    published: bool
    """True for a published conclusion or knowledge answer; False for a fallback or a failure."""
    kind: Expected | None
    """CONCLUSION or ANSWER when published, FALLBACK for a fallback, None when the run failed."""
    text: str
    """Everything published, as one text: statements, facts, cited excerpts, fallback words."""
    fallback_type: str | None = None


@dataclass(frozen=True)
class Score:
    """One answer's verdict and what decided it (each reason one short line)."""

    verdict: Verdict
    published_wrong: bool = False
    reasons: tuple[str, ...] = field(default=())


def score(expectation: Expectation, answer: Answer) -> Score:
    """The verdict of ``answer`` for a case expecting ``expectation``."""
    text = normalise(answer.text).casefold()
    missing = tuple(
        f"missing: {m}" for m in expectation.must if normalise(m).casefold() not in text
    )
    present = tuple(
        f"must not say: {m}" for m in expectation.must_not if normalise(m).casefold() in text
    )
    if expectation.outcome is Expected.FALLBACK:
        if answer.published:
            return Score(Verdict.WRONG, True, ("published where a fallback was expected", *present))
        if answer.kind is not Expected.FALLBACK:
            return Score(Verdict.WRONG, reasons=("the run failed: no fallback was published",))
        wanted = expectation.fallback_type
        if wanted is not None and answer.fallback_type != wanted:
            got = answer.fallback_type or "none"
            return Score(Verdict.WRONG, reasons=(f"fallback {got}, expected {wanted}",))
        if missing or present:  # a fallback says what it must too (the data's range, the services)
            return Score(Verdict.WRONG, reasons=missing + present)
        return Score(Verdict.CORRECT)
    if not answer.published:
        if answer.kind is Expected.FALLBACK:
            return Score(Verdict.FALLBACK, reasons=(f"fallback {answer.fallback_type or ''}",))
        return Score(Verdict.WRONG, reasons=("the run failed: nothing was published",))
    problems = missing + present
    if answer.kind is not expectation.outcome:
        problems = (f"published a {answer.kind.value if answer.kind else '?'}", *problems)
    if problems:
        return Score(Verdict.WRONG, True, problems)
    return Score(Verdict.CORRECT)


@dataclass(frozen=True)
class CaseResult:
    """One case of an evaluation, run and scored: what ``harness eval`` reports and records."""

    case_id: str
    question: str
    verdict: Verdict
    published_wrong: bool
    reasons: tuple[str, ...]
    run_id: str | None
    """The case's run (in the case's own store), None when it could not start."""
    state: str
    """The run's terminal :class:`~domain.states.RunState` value (or ``NOT_RUN``)."""
    release: str | None
    """The :class:`~domain.release_states.ReleaseOutcome` value, when the run got that far."""
    fallback_type: str | None
    tokens: int
    model_calls: int
    latency_ms: int


@dataclass(frozen=True)
class Totals:
    """The counts of an evaluation: each case is one of correct, fallback or wrong."""

    cases: int
    correct: int
    fallback: int
    wrong: int
    published_wrong: int
    tokens: int
    model_calls: int
    latency_ms: int


def totals(results: tuple[CaseResult, ...] | list[CaseResult]) -> Totals:
    """The counts over ``results``."""
    verdicts = [r.verdict for r in results]
    return Totals(
        cases=len(results),
        correct=verdicts.count(Verdict.CORRECT),
        fallback=verdicts.count(Verdict.FALLBACK),
        wrong=verdicts.count(Verdict.WRONG),
        published_wrong=sum(r.published_wrong for r in results),
        tokens=sum(r.tokens for r in results),
        model_calls=sum(r.model_calls for r in results),
        latency_ms=sum(r.latency_ms for r in results),
    )


@dataclass(frozen=True)
class EvalReport:
    """A whole evaluation: which suite, against which model and settings, and every case's result.

    ``settings`` holds what shapes the answers (the model and its provider, timeouts, budgets,
    the deadline, the tools' source), as text; never a secret.
    """

    eval_id: UUID
    suite: str
    model: str
    settings: dict[str, str]
    started_at: datetime
    finished_at: datetime
    results: tuple[CaseResult, ...]

    @property
    def totals(self) -> Totals:
        """The counts over every case."""
        return totals(self.results)
