"""Retrieval re-ranks the full-text hits: a heading that holds the question's words wins."""

from __future__ import annotations

from application.ports import Passage
from infrastructure.knowledge import ranked, search_terms


def passage(pid: str, title: str, score: float) -> Passage:
    return Passage(id=pid, title=title, text="…", score=score)


def test_the_section_named_for_the_question_ranks_first() -> None:
    found = [
        passage("oom#symptoms", "Memory leaks and OOMKilled pods — Symptoms", 4.5),
        passage("restart#how", "Restarting a service — How to restart a service", 3.0),
    ]
    terms = search_terms("How do I restart the checkout service?")
    assert [p.id for p in ranked(found, terms)] == ["restart#how", "oom#symptoms"]


def test_a_stem_matches_and_an_unrelated_heading_does_not() -> None:
    found = [
        passage("a", "Runbook — Before restarting", 1.0),
        passage("b", "Runbook — Overview", 1.0),
    ]
    ranked_found = ranked(found, ["restart"])
    assert [p.id for p in ranked_found] == ["a", "b"]
    assert ranked_found[1].score == 1.0  # no heading word asked: the full-text score stands


def test_a_much_better_full_text_match_is_not_overturned_by_one_heading_word() -> None:
    found = [
        passage("body", "Runbook — Overview", 10.0),
        passage("head", "Runbook — Restart and other things and more", 2.0),
    ]
    assert [p.id for p in ranked(found, ["restart"])][0] == "body"


def test_ties_keep_the_full_text_order() -> None:
    found = [passage("x", "R — Overview", 2.0), passage("y", "R — Notes", 2.0)]
    assert [p.id for p in ranked(found, ["restart"])] == ["x", "y"]


def test_a_question_asking_to_see_something_is_answered_by_the_diagnose_section() -> None:
    found = [
        Passage("pool#prevent", "Pool — Prevent", "connections return to the pool", 2.0),
        Passage("pool#diagnose", "Pool — Diagnose", "count connections per service", 1.8),
    ]
    terms = ["see", "service", "holds", "database", "connections"]
    assert [p.id for p in ranked(found, terms)] == ["pool#diagnose", "pool#prevent"]
