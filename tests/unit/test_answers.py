"""domain.answers: the rules of the system-chat and knowledge answers, as pure functions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.answers import (
    FIRST_SENTENCE_CHARS,
    AnswerRefusal,
    ChatReply,
    first_sentence,
    knowledge_answer,
    pick_reply,
    quotable_sentences,
    rejected_citations,
    sentences,
)
from domain.grounding import Citation, occurs
from domain.release_states import CitationProblem

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


def test_a_knowledge_answer_has_text_and_citations_only() -> None:
    citation = {"reference": "a#b", "excerpt": "some quoted words"}
    assert knowledge_answer({"text": "t", "citations": [citation]}) == (
        "t",
        (Citation("a#b", "some quoted words"),),
    )
    assert knowledge_answer({"text": "t", "citations": []}) is AnswerRefusal.NO_CITATION
    for bad in (
        {"text": "t"},
        {"text": " ", "citations": [citation]},
        {"text": "t", "citations": [citation], "extra": 1},
        {"text": "t", "citations": [{"reference": "a#b"}]},
        {"text": "t", "citations": [{"reference": 1, "excerpt": "x"}]},
        {"text": "x" * 5000, "citations": [citation]},
        "t",
    ):
        assert knowledge_answer(bad) is AnswerRefusal.NOT_AN_ANSWER, bad


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
