"""The offline model's knowledge answer: the sentence that answers the question, or nothing."""

from __future__ import annotations

from typing import Any

from infrastructure.offline_knowledge import answer

ESCALATION = {
    "id": "oncall#escalation-path",
    "title": "On-call escalation policy — Escalation path",
    "text": "1. The primary on-call engineer acknowledges a page within 5 minutes.\n"
    "2. Not acknowledged after 10 minutes: the pager escalates to the secondary on-call.",
}
PREVENT = {
    "id": "pool#prevent",
    "title": "Database connection pool exhaustion — Prevent",
    "text": "- Always use context managers for sessions so connections return to the pool.",
}


def _said(found: dict[str, Any]) -> list[str]:
    return [c["excerpt"] for s in found["statements"] for c in s["citations"]]


def test_a_question_about_what_does_not_happen_is_answered_by_the_negated_sentence() -> None:
    found = answer([ESCALATION], "Who is paged when the primary on-call does not acknowledge?")
    assert _said(found) == [
        "Not acknowledged after 10 minutes: the pager escalates to the secondary on-call."
    ]


def test_a_sentence_beside_the_point_is_not_stated() -> None:
    assert answer([PREVENT], "How do I see which service holds the database connections?") == {
        "statements": []
    }  # the harness lists the passages instead


def test_the_sentence_sharing_most_words_is_stated() -> None:
    found = answer(
        [ESCALATION], "How quickly does the primary on-call engineer acknowledge a page?"
    )
    assert _said(found) == ["The primary on-call engineer acknowledges a page within 5 minutes."]
