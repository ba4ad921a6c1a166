"""Design §10.1 on the answer routes, on both stores: a system-chat answer makes no claim about
the systems (the harness writes its text), and a knowledge answer is published only when every
citation is a retrieved passage quoted verbatim and informatively."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import pytest

from application.chat import ChatResult
from application.ports import Passage
from application.replies import EXAMPLE_DIAGNOSIS
from application.store import HarnessStore
from bootstrap.composition import Services
from domain.answer_rules import ChatReply, first_sentence
from domain.grounding import occurs
from domain.release_states import ReleaseOutcome
from domain.states import Intent, RunState
from tests.helpers import FixedPassages, scripted

MISROUTED = "Why was checkout slow on 2026-11-29?"
CLAIM = "checkout was slow because deploy v2.14.0 broke pricing"

PASSAGES = (
    Passage(
        "checkout-restart#steps",
        "Restarting checkout — Steps",
        "1. Drain the node first.\n2. Run `kubectl rollout restart deployment/checkout` and"
        " wait until every pod is ready.\n",
        2.0,
    ),
    Passage(
        "checkout-restart#verify",
        "Restarting checkout — Verify",
        "- The error rate returns to baseline within ten minutes.\n",
        1.0,
    ),
)
VALID_EXCERPT = (
    "Run `kubectl rollout restart deployment/checkout` and wait until every pod is ready."
)
MODEL_TEXT = "Restart it with kubectl rollout restart, then watch the pods."


@pytest.fixture
def play(services: Services) -> Iterator[Any]:
    with ExitStack() as opened:

        def run(
            scenario: dict[str, Any], query: str, passages: Sequence[Passage] = ()
        ) -> ChatResult:
            made = scripted(services, scenario, knowledge=FixedPassages(passages))
            return opened.enter_context(made).service.ask("session-1", query)

        yield run


def _published(store: HarnessStore, result: ChatResult) -> dict[str, Any]:
    """The content as the run's RELEASE_DECISION recorded it (what an auditor reads)."""
    run = store.get_run(result.run_id)
    assert run.termination is not None and run.termination.state is RunState.SUCCESS
    assert result.release_outcome is ReleaseOutcome.SUCCESS
    assert run.published == result.content and run.published is not None
    return dict(run.published)


# -- SYSTEM_CHAT ---------------------------------------------------------------------------------


def test_a_misrouted_diagnostic_question_gets_none_of_the_models_words(
    store: HarnessStore, play: Any
) -> None:
    result = play({"route": "SYSTEM_CHAT", "answer": CLAIM}, MISROUTED)

    content = _published(store, result)
    assert store.get_run(result.run_id).intent is Intent.SYSTEM_CHAT
    said = json.dumps(content)
    for word in ("deploy", "pricing", "v2.14.0", "because", "broke"):
        assert word not in said, content
    assert content["refused"] is True and content["refusal"] == "NOT_JSON"
    assert content["reply"] == "HOW_TO_ASK"
    assert "diagnostic question" in content["text"] and EXAMPLE_DIAGNOSIS in content["text"]


@pytest.mark.parametrize(
    ("answer", "refusal"),
    [
        ({"json": {"reply": "DIAGNOSIS"}}, "NOT_A_REPLY"),
        ({"json": {"reply": "GREETING", "text": CLAIM}}, "NOT_A_REPLY"),
        ({"json": [CLAIM]}, "NOT_A_REPLY"),
        ({"text": ""}, "NOT_JSON"),
        ({"text": '{"reply": "GREETING"'}, "NOT_JSON"),
    ],
    ids=["unknown-reply", "reply-with-text", "not-an-object", "empty", "cut-json"],
)
def test_any_answer_but_one_reply_is_refused(
    store: HarnessStore, play: Any, answer: dict[str, Any], refusal: str
) -> None:
    content = _published(store, play({"route": "SYSTEM_CHAT", "answer": answer}, MISROUTED))

    assert "pricing" not in json.dumps(content)
    assert (content["reply"], content["refused"], content["refusal"]) == (
        "HOW_TO_ASK",
        True,
        refusal,
    )


@pytest.mark.parametrize("reply", [r.value for r in ChatReply])
def test_a_picked_reply_publishes_the_harness_text(
    store: HarnessStore, play: Any, reply: str
) -> None:
    content = _published(store, play({"route": "SYSTEM_CHAT", "answer": reply}, "hello"))

    assert (content["reply"], content["refused"], content["refusal"]) == (reply, False, None)
    assert EXAMPLE_DIAGNOSIS in content["text"]


# -- KNOWLEDGE_QUERY -----------------------------------------------------------------------------


def _knowledge(reference: str, excerpt: str) -> dict[str, Any]:
    cited = [{"reference": reference, "excerpt": excerpt}]
    return {"statements": [{"statement": MODEL_TEXT, "citations": cited}]}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (_knowledge("checkout-restart#steps", "Restart every node at once."), "EXCERPT_ABSENT"),
        (_knowledge("checkout-restart#steps", "the"), "EXCERPT_TOO_WEAK"),
        (_knowledge("checkout-restart#rollback", VALID_EXCERPT), "UNKNOWN_REFERENCE"),
        (_knowledge("checkout-restart#steps", VALID_EXCERPT), None),
    ],
    ids=["absent", "weak", "unknown-id", "valid"],
)
def test_only_a_knowledge_answer_whose_citations_prove_is_published(
    store: HarnessStore, play: Any, answer: dict[str, Any], problem: str | None
) -> None:
    scenario = {"route": "KNOWLEDGE_QUERY", "answer": answer, "judge": "SUPPORTED"}
    content = _published(store, play(scenario, "How do I restart checkout?", PASSAGES))

    [statement] = answer["statements"]
    if problem is None:
        assert content["grounded"] is True and content["text"] == MODEL_TEXT
        assert content["citations"] == statement["citations"]
        cited = PASSAGES[0]
        assert content["passages"] == [{"id": cited.id, "title": cited.title, "text": cited.text}]
        assert content["refusal"] is None and content["rejected_citations"] == []
        return
    assert content["grounded"] is False and "kubectl rollout" not in content["text"]
    assert MODEL_TEXT not in json.dumps(content)
    assert content["refusal"] == "CITATION_REJECTED" and content["citations"] == []
    [rejected] = content["rejected_citations"]
    cited = statement["citations"][0]
    reference = cited["reference"] if problem != "UNKNOWN_REFERENCE" else "‹25 characters›"
    shown = {"reference": reference, "excerpt": f"‹{len(cited['excerpt'])} characters›"}
    assert rejected == {**shown, "problem": problem}  # the model's words measured, not shown
    _lists_the_passages(content)


@pytest.mark.parametrize(
    ("answer", "refusal"),
    [
        (MODEL_TEXT, "NOT_JSON"),
        ({"statements": [{"statement": MODEL_TEXT, "citations": []}]}, "NO_CITATION"),
        ({"json": {"statements": [{"statement": MODEL_TEXT}]}}, "NOT_AN_ANSWER"),
        (
            {"json": {"statements": [{"statement": MODEL_TEXT, "citations": [VALID_EXCERPT]}]}},
            "NOT_AN_ANSWER",
        ),
        (
            {"json": {"text": MODEL_TEXT, "citations": [{"reference": "x", "excerpt": "y"}]}},
            "NOT_AN_ANSWER",
        ),
        ({"text": "{" + " " * 33_000 + "}"}, "TOO_LARGE"),
    ],
    ids=["prose", "no-citation", "no-citations-key", "citation-not-an-object", "text", "long"],
)
def test_an_answer_without_proving_citations_lists_the_passages(
    store: HarnessStore, play: Any, answer: Any, refusal: str
) -> None:
    scenario = {"route": "KNOWLEDGE_QUERY", "answer": answer}
    content = _published(store, play(scenario, "How do I restart checkout?", PASSAGES))

    assert content["grounded"] is False and content["refusal"] == refusal
    assert MODEL_TEXT not in json.dumps(content)
    _lists_the_passages(content)


def test_one_failing_citation_refuses_the_whole_answer(store: HarnessStore, play: Any) -> None:
    answer = _knowledge("checkout-restart#steps", VALID_EXCERPT)
    cited = {"reference": "checkout-restart#verify", "excerpt": "pods ready"}
    answer["statements"][0]["citations"].append(cited)
    content = _published(
        store, play({"route": "KNOWLEDGE_QUERY", "answer": answer}, "restart?", PASSAGES)
    )

    assert content["grounded"] is False and MODEL_TEXT not in content["text"]
    assert [r["problem"] for r in content["rejected_citations"]] == ["EXCERPT_TOO_WEAK"]


def test_nothing_retrieved_says_so_without_asking_the_model(store: HarnessStore, play: Any) -> None:
    scenario = {"route": "KNOWLEDGE_QUERY", "answer": _knowledge("x#y", VALID_EXCERPT)}
    result = play(scenario, "How do I restart checkout?", ())
    content = _published(store, result)

    assert content["grounded"] is False and content["refusal"] == "NOTHING_RETRIEVED"
    assert content["passages"] == [] and "No runbook passage matched" in content["text"]
    assert store.get_run(result.run_id).usage.model_calls == 1  # the router only


def _lists_the_passages(content: dict[str, Any]) -> None:
    """The harness's own text: every retrieved passage's id, title and first sentence."""
    assert "could not be grounded" in content["text"]
    for passage, listed in zip(PASSAGES, content["passages"], strict=True):
        sentence = first_sentence(passage.text)
        assert listed == {"id": passage.id, "title": passage.title, "sentence": sentence}
        assert occurs(sentence, passage.text) and sentence
        assert f"[{passage.id}] {passage.title}: {sentence}" in content["text"]
