"""The Run's knowledge-answer commands, given/when/then over events (design §10.1).

The passages retrieved and the answer proposed are recorded once each; the judge rules only on
an answer that parsed, its verdict is SUPPORTED only when every statement is, and a knowledge
answer it was asked about is released only after its decision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from domain.answer_rules import AnswerRefusal, RetrievedPassage
from domain.errors import IllegalTransitionError, InvalidCommandError
from domain.grounding import Citation, JudgedStatement
from domain.release_states import ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import MAX_MODEL_OUTPUT_CHARS, Intent
from tests.unit.gwt import replay, then_events, then_refused

DEADLINE = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=1)
PASSAGE = RetrievedPassage("a#b", "A — B", "Drain the node first.")
CITED = (Citation("a#b", "Drain the node first."),)
Step = Callable[[Run], None]


def given(intent: Intent, *steps: Step) -> Run:
    run = Run.start("session-1", "how do I restart?", DEADLINE, run_id=UUID(int=7))
    run.attempt_routing()
    run.decide_routing(intent)
    for step in steps:
        step(run)
    return replay(Run, run.collect_events())


def retrieved(run: Run) -> None:
    run.retrieve_passages((PASSAGE,))


def proposed(refusal: AnswerRefusal | None = None) -> Step:
    return lambda run: run.propose_answer("{}", refusal)


def attempted(run: Run) -> None:
    run.attempt_semantic_guard()


def judged(*verdicts: SemanticVerdict | None) -> tuple[JudgedStatement, ...]:
    return tuple(JudgedStatement(f"s{i}", CITED, v) for i, v in enumerate(verdicts))


S, U = SemanticVerdict.SUPPORTED, SemanticVerdict.UNSUPPORTED


def test_the_passages_and_the_answer_are_recorded_whole() -> None:
    run = given(Intent.KNOWLEDGE_QUERY, retrieved)
    text = '{"statements": []}'
    run.propose_answer(text, None)

    digest = hashlib.sha256(text.encode()).hexdigest()
    assert then_events(run) == [
        (
            Run.AnswerProposed,
            {"text": text, "length": len(text), "sha256": digest, "refusal": None},
        )
    ]
    assert run.answer_parsed is True


def test_an_answer_is_recorded_whole_and_one_over_the_limit_is_never_proposed() -> None:
    run = given(Intent.KNOWLEDGE_QUERY, retrieved)
    too_long = "x" * (MAX_MODEL_OUTPUT_CHARS + 1)
    then_refused(run, InvalidCommandError, lambda r: r.propose_answer(too_long, None))
    long = "x" * MAX_MODEL_OUTPUT_CHARS
    run.propose_answer(long, AnswerRefusal.NOT_JSON)
    [(_, payload)] = then_events(run)
    assert payload["text"] == long and payload["length"] == len(long)


@pytest.mark.parametrize(
    ("steps", "command"),
    [
        ((), lambda r: r.propose_answer("{}", None)),  # no passages retrieved
        ((retrieved, proposed()), lambda r: r.propose_answer("{}", None)),  # twice
        ((retrieved,), lambda r: r.retrieve_passages((PASSAGE,))),  # twice
        ((retrieved, proposed(AnswerRefusal.NOT_JSON)), attempted),  # nothing parsed
        ((retrieved,), attempted),  # nothing proposed
        ((retrieved, proposed(), attempted), lambda r: r.check_evidence(True, True)),
        (
            (retrieved, proposed(), attempted),
            lambda r: r.decide_release(ReleaseOutcome.SUCCESS, None, {}),
        ),
    ],
    ids=[
        "answer-without-passages",
        "answer-twice",
        "passages-twice",
        "judge-unparsed",
        "judge-unproposed",
        "evidence-guard",
        "release-while-judging",
    ],
)
def test_out_of_order_knowledge_events_are_refused(
    steps: tuple[Step, ...], command: Callable[[Run], None]
) -> None:
    then_refused(given(Intent.KNOWLEDGE_QUERY, *steps), IllegalTransitionError, command)


def test_only_a_knowledge_run_retrieves_passages() -> None:
    for intent in (Intent.DIAGNOSIS, Intent.SYSTEM_CHAT):
        then_refused(given(intent), IllegalTransitionError, retrieved)


@pytest.mark.parametrize(
    ("verdict", "statements"),
    [(S, judged(S, U)), (U, judged(S, S)), (S, ()), (None, ())],
    ids=["supported-over-a-rejection", "unsupported-over-support", "no-statements", "none"],
)
def test_the_answer_verdict_is_that_of_every_statement(
    verdict: SemanticVerdict | None, statements: tuple[JudgedStatement, ...]
) -> None:
    run = given(Intent.KNOWLEDGE_QUERY, retrieved, proposed(), attempted)
    reason = "" if verdict else "judge failed"
    then_refused(
        run, InvalidCommandError, lambda r: r.decide_semantic_guard(verdict, reason, statements)
    )


def test_a_judged_answer_is_released_after_the_decision() -> None:
    run = given(Intent.KNOWLEDGE_QUERY, retrieved, proposed(), attempted)
    run.decide_semantic_guard(U, "", judged(S, U))
    run.decide_release(ReleaseOutcome.SUCCESS, None, {"grounded": False})

    assert [kind for kind, _ in then_events(run)] == [
        Run.SemanticGuardDecision,
        Run.ReleaseDecision,
    ]
