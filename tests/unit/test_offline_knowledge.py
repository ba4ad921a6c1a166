"""The offline model's knowledge answers and its judge of them (design §10.1).

Its judge supports each honest answer it gives from the runbooks, and rules UNSUPPORTED any
statement that says more than the passages it quotes: the opposite of them, or the live state of
a system, which a runbook cannot tell.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from domain.answers import quotable_sentences
from infrastructure.knowledge import load_runbooks
from infrastructure.model_offline import judge
from infrastructure.offline_knowledge import answer, live_claim

PASSAGE = {
    "id": "rollback#when",
    "title": "Safe rollback — When to roll back",
    "text": "Roll back when p99 latency doubles within an hour of a deploy.\n"
    "Confirm the deploy is the cause before rolling back.",
}
QUOTE = "Roll back when p99 latency doubles within an hour of a deploy."


def _verdicts(statements: list[dict[str, Any]], passages: list[dict[str, str]]) -> list[str]:
    payload = {
        "statements": [
            {"statement": i, "text": s["statement"], "citations": s["citations"]}
            for i, s in enumerate(statements)
        ],
        "passages": {p["id"]: {"title": p["title"], "text": p["text"]} for p in passages},
    }
    return [v["verdict"] for v in json.loads(judge(json.dumps(payload)))["verdicts"]]


def test_every_runbook_answer_of_the_offline_model_is_supported_by_its_judge() -> None:
    passages = [
        {"id": p.id, "title": p.title, "text": p.text}
        for p in load_runbooks()
        if quotable_sentences(p.text)
    ]
    assert len(passages) > 20
    for passage in passages:
        statements = answer([passage])["statements"]
        assert _verdicts(statements, [passage]) == ["SUPPORTED"], statements


@pytest.mark.parametrize(
    "said",
    [
        "The deploy was bad; roll it back.",
        "Checkout is broken now: Roll back when p99 latency doubles within an hour of a deploy.",
        "The deploy caused the latency, so roll back.",
        "Checkout broke after the deploy; roll back.",
        "Checkout went down on 2026-11-29, roll back.",
        "Never roll back: Roll back when p99 latency doubles within an hour of a deploy.",
        "Roll back within a day of a deploy.",
    ],
)
def test_a_live_claim_or_a_claim_beyond_the_quote_is_unsupported(said: str) -> None:
    cited = [{"reference": PASSAGE["id"], "excerpt": QUOTE}]
    assert _verdicts([{"statement": said, "citations": cited}], [PASSAGE]) == ["UNSUPPORTED"]


@pytest.mark.parametrize(
    "said",
    [
        QUOTE,
        f"The runbook says: {QUOTE}",
        "Confirm the deploy is the cause before rolling back, then roll back.",
        "Roll back when the p99 latency doubles within an hour of a deploy.",
    ],
)
def test_a_how_to_statement_in_the_passages_words_is_supported(said: str) -> None:
    cited = [{"reference": PASSAGE["id"], "excerpt": QUOTE}]
    assert _verdicts([{"statement": said, "citations": cited}], [PASSAGE]) == ["SUPPORTED"]


def test_a_citation_of_a_passage_not_given_or_a_quote_not_in_it_is_unsupported() -> None:
    other = [{"reference": "x#y", "excerpt": QUOTE}]
    absent = [{"reference": PASSAGE["id"], "excerpt": "Roll back every deploy at once."}]
    for cited in (other, absent, []):
        assert _verdicts([{"statement": QUOTE, "citations": cited}], [PASSAGE]) == ["UNSUPPORTED"]


def test_a_condition_is_no_live_claim_but_its_conclusion_is() -> None:
    assert live_claim("if the deploy was bad, roll it back", "") is None
    assert live_claim("the deploy was bad, so roll it back", "") == "the deploy was bad"
