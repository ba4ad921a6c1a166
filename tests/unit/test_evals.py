"""Scoring an answer against its case: correct, fallback, wrong, and published-and-wrong."""

from __future__ import annotations

import pytest

from domain.evals import Answer, Expectation, Expected, Verdict, score

CAUSE = Expectation(
    Expected.CONCLUSION, must=("v2.14.0", "upstream timeout"), must_not=("v2.13.4",)
)
RIGHT = "Checkout slowed after deploy V2.14.0: 'upstream   timeout after 30s'."


@pytest.mark.parametrize(
    ("expectation", "answer", "verdict", "published_wrong"),
    [
        (CAUSE, Answer(True, Expected.CONCLUSION, RIGHT), Verdict.CORRECT, False),
        (CAUSE, Answer(True, Expected.CONCLUSION, RIGHT + " v2.13.4"), Verdict.WRONG, True),
        (CAUSE, Answer(True, Expected.CONCLUSION, "deploy v2.14.0"), Verdict.WRONG, True),
        (CAUSE, Answer(True, Expected.ANSWER, RIGHT), Verdict.WRONG, True),
        (
            CAUSE,
            Answer(False, Expected.FALLBACK, "", "INSUFFICIENT_EVIDENCE"),
            Verdict.FALLBACK,
            False,
        ),
        (CAUSE, Answer(False, None, ""), Verdict.WRONG, False),
        (
            Expectation(Expected.FALLBACK, fallback_type="MISSING_REQUIRED_CONTEXT"),
            Answer(False, Expected.FALLBACK, "", "MISSING_REQUIRED_CONTEXT"),
            Verdict.CORRECT,
            False,
        ),
        (
            Expectation(Expected.FALLBACK, fallback_type="MISSING_REQUIRED_CONTEXT"),
            Answer(False, Expected.FALLBACK, "", "INSUFFICIENT_EVIDENCE"),
            Verdict.WRONG,
            False,
        ),
        (
            Expectation(Expected.FALLBACK),
            Answer(True, Expected.CONCLUSION, RIGHT),
            Verdict.WRONG,
            True,
        ),
        (
            Expectation(Expected.FALLBACK, must=("2026-11-28",)),
            Answer(False, Expected.FALLBACK, "no records then", "INSUFFICIENT_EVIDENCE"),
            Verdict.WRONG,
            False,
        ),
        (
            Expectation(Expected.FALLBACK, must_not=("v2.13.4",)),
            Answer(False, Expected.FALLBACK, "observed deploy v2.13.4", "INSUFFICIENT_EVIDENCE"),
            Verdict.WRONG,
            False,
        ),
    ],
)
def test_every_answer_gets_one_verdict(
    expectation: Expectation, answer: Answer, verdict: Verdict, published_wrong: bool
) -> None:
    scored = score(expectation, answer)
    assert (scored.verdict, scored.published_wrong) == (verdict, published_wrong)
    assert (scored.verdict is Verdict.CORRECT) == (not scored.reasons)
