"""domain.answer_rules: the rules of the system-chat and knowledge answers, as pure functions."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from domain.answer_rules import (
    FIRST_SENTENCE_CHARS,
    AnswerRefusal,
    ChatReply,
    answer_citations,
    answer_text,
    answer_verdict,
    first_sentence,
    knowledge_answer,
    live_reference,
    pick_reply,
    quotable_sentences,
    rejected_citations,
    sentences,
)
from domain.grounding import Citation, JudgedStatement, occurs
from domain.release_states import CitationProblem, SemanticVerdict
from domain.values import Fact

RUNBOOK = (
    "1. With cert-manager, trigger renewal with `cmctl renew <name>`; check the ACME challenge\n"
    "   (HTTP-01 or DNS-01) succeeds.\n"
    "2. For manual certificates, issue a new one. Then deploy it!\n\n"
    "## Verify\n- ok.\n"
)


def test_sentences_start_at_list_items_and_headings_and_keep_their_words() -> None:
    assert sentences(RUNBOOK) == [
        "With cert-manager, trigger renewal with `cmctl renew <name>`; check the ACME challenge"
        " (HTTP-01 or DNS-01) succeeds.",
        "For manual certificates, issue a new one.",
        "Then deploy it!",
        "Verify",
        "ok.",
    ]
    assert quotable_sentences(RUNBOOK)[1:] == [
        "For manual certificates, issue a new one.",
        "Then deploy it!",
    ]


def test_a_long_first_sentence_is_cut_at_a_word() -> None:
    text = "word " * 200 + "end."
    first = first_sentence(text)
    assert len(first) <= FIRST_SENTENCE_CHARS and first.endswith("word") and occurs(first, text)
    assert first_sentence("") == ""


@given(st.text(max_size=400))
def test_every_sentence_occurs_verbatim_in_its_text(text: str) -> None:
    for sentence in sentences(text):
        assert sentence and occurs(sentence, text)
    first = first_sentence(text)
    assert first == "" or occurs(first, text)


def test_only_one_named_reply_is_picked() -> None:
    assert pick_reply({"reply": "THANKS"}) == (ChatReply.THANKS, None)
    refused = (ChatReply.HOW_TO_ASK, AnswerRefusal.NOT_A_REPLY)
    for answer in ({"reply": "thanks"}, {"reply": "THANKS", "text": "x"}, ["THANKS"], None, {}):
        assert pick_reply(answer) == refused


def test_a_knowledge_answer_is_statements_each_with_citations_only() -> None:
    citation = {"reference": "a#b", "excerpt": "some quoted words"}
    one = {"statement": "t", "citations": [citation]}
    assert knowledge_answer({"statements": [one, {**one, "statement": "u"}]}) == (
        Fact("t", (Citation("a#b", "some quoted words"),)),
        Fact("u", (Citation("a#b", "some quoted words"),)),
    )
    no_citation = {"statements": [one, {"statement": "u", "citations": []}]}
    assert knowledge_answer(no_citation) is AnswerRefusal.NO_CITATION
    bad: Any
    for bad in (
        {"statements": []},
        {"statements": [one], "extra": 1},
        {"text": "t", "citations": [citation]},  # the shape before statements
        {"statements": [{"statement": " ", "citations": [citation]}]},
        {"statements": [{**one, "extra": 1}]},
        {"statements": [{"statement": "t", "citations": [{"reference": "a#b"}]}]},
        {"statements": [{"statement": "t", "citations": [{"reference": 1, "excerpt": "x"}]}]},
        {"statements": [{"statement": "x" * 5000, "citations": [citation]}]},
        {"statements": [one] * 11},
        {"statements": one},
        "t",
    ):
        assert knowledge_answer(bad) is AnswerRefusal.NOT_AN_ANSWER, bad


def test_the_published_text_and_citations_are_the_statements_in_order() -> None:
    a, b = Citation("a#b", "Drain the node first"), Citation("a#c", "Restart the pods")
    said = (Fact(" Drain\nthe node. ", (a,)), Fact("Then restart.", (b, a)))
    assert answer_text(said) == "Drain the node. Then restart."
    assert answer_citations(said) == (a, b)


def test_the_answer_verdict_is_supported_only_when_every_statement_is() -> None:
    def judged(*verdicts: SemanticVerdict | None) -> list[JudgedStatement]:
        return [JudgedStatement("s", (), v) for v in verdicts]

    supported, unsupported = SemanticVerdict.SUPPORTED, SemanticVerdict.UNSUPPORTED
    assert answer_verdict(judged(supported, supported)) is supported
    assert answer_verdict(judged(supported, unsupported)) is unsupported
    assert answer_verdict(judged(unsupported, None)) is None
    assert answer_verdict(judged()) is None


def test_a_statement_naming_a_moment_its_excerpts_do_not_speaks_of_the_live_systems() -> None:
    quote = Citation("r#s", "Roll back the deploy when p99 latency doubles.")
    for live, found in (
        ("Checkout was slow on 2026-11-29: roll back the deploy.", "2026-11-29"),
        ("Roll back the deploy; checkout is currently slow.", "currently"),
        ("Between 10:00 and 12:00 the deploy doubled latency.", "10:00"),
        ("Right now, roll back the deploy.", "Right now"),
    ):
        assert live_reference(Fact(live, (quote,))) == found, live
    for how_to in (
        "Roll back the deploy when p99 latency doubles.",
        "A deploy is rolled back with the rollback command.",
    ):
        assert live_reference(Fact(how_to, (quote,))) is None, how_to
    dated = Citation("r#s", "Certificates issued before 2026-01-01 use the old CA.")
    assert live_reference(Fact("Those issued before 2026-01-01 use the old CA.", (dated,))) is None


def test_each_failing_citation_is_named_with_its_problem() -> None:
    passages = {"a#b": "Drain the node before you restart the service."}
    good = Citation("a#b", "Drain the node before you restart")
    cited = [
        good,
        Citation("a#b", "the"),
        Citation("a#b", "Restart the whole cluster now"),
        Citation("a#c", "Drain the node before you restart"),
        good,
        Citation("a#b", " Drain  the node\nbefore you restart"),  # the same one, respaced
    ]
    assert [problem for _, problem in rejected_citations(cited, passages)] == [
        CitationProblem.EXCERPT_TOO_WEAK,
        CitationProblem.EXCERPT_ABSENT,
        CitationProblem.UNKNOWN_REFERENCE,
        CitationProblem.DUPLICATE,
        CitationProblem.DUPLICATE,
    ]
    assert rejected_citations([good], passages) == []
