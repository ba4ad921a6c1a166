"""domain.published and domain.published_reader: what a run publishes, as stored and read back.

The typed content stores exactly the dicts the builders stored before it existed: the reference
builders below are those of ``application/published.py`` and ``application/replies.py`` as of
6fbc0bc, verbatim but for taking their parts as arguments; ``json.dumps`` of both must be the
same bytes, keys in the same order. Stored content reads back to the same value, and anything
else reads as :class:`Unreadable`, never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.drafts import MissingOut
from application.published import FALLBACK_MESSAGES, missing_item, missing_question, report
from application.replies import grounded_content, reply_content, ungrounded_content
from domain.answer_rules import (
    AnswerRefusal,
    ChatReply,
    RetrievedPassage,
    answer_citations,
    answer_text,
    first_sentence,
)
from domain.grounding import SHOWN_EXCERPT, Citation
from domain.published import SERVICE_PATTERN, FallbackContent, Published
from domain.published_reader import parse_published, published_conclusion
from domain.recorded import Unreadable, conclusion_of
from domain.release_states import CitationProblem, FallbackType
from domain.states import MissingKind
from domain.values import Fact
from tests._fuzz import fuzz_settings

# -- the builders as of 6fbc0bc ----------------------------------------------------------------


def old_fact_json(fact: Fact) -> dict[str, Any]:
    return {
        "statement": fact.statement,
        "citations": [{"reference": c.reference, "excerpt": c.excerpt} for c in fact.citations],
        "references": list(fact.references),
    }


def old_report(conclusion: Fact, facts: Sequence[Fact]) -> dict[str, Any]:
    return {
        "kind": "diagnosis",
        "conclusion": conclusion.statement,
        "citations": old_fact_json(conclusion)["citations"],
        "references": list(conclusion.references),
        "facts": [old_fact_json(f) for f in facts],
    }


def old_fallback(
    kind: FallbackType,
    facts: Sequence[Fact],
    no_evidence: list[str],
    not_checked: list[str],
    items: Sequence[MissingOut],
) -> dict[str, Any]:
    return {
        "kind": "fallback",
        "fallback_type": kind.value,
        "message": FALLBACK_MESSAGES[kind],
        "verified_facts": [old_fact_json(f) for f in facts],
        "no_evidence": no_evidence,
        "not_checked": not_checked,
        "missing_info": [missing_question(m) for m in items],
        "missing": [m.model_dump(mode="json", exclude_none=True) for m in items],
    }


def old_reply_content(reply: ChatReply, refusal: AnswerRefusal | None, text: str) -> Any:
    return {
        "kind": "answer",
        "reply": reply.value,
        "text": text,
        "refused": refusal is not None,
        "refusal": refusal.value if refusal else None,
    }


def old_grounded_content(
    text: str, citations: Sequence[Citation], passages: Sequence[RetrievedPassage]
) -> dict[str, Any]:
    return {
        "kind": "answer",
        "grounded": True,
        "text": text,
        "citations": [{"reference": c.reference, "excerpt": c.excerpt} for c in citations],
        "passages": [{"id": p.id, "title": p.title, "text": p.text} for p in passages],
        "refusal": None,
        "rejected_citations": [],
    }


def old_ungrounded_content(
    passages: Sequence[RetrievedPassage],
    refusal: AnswerRefusal,
    rejected: Sequence[tuple[Citation, CitationProblem]],
    text: str,
) -> dict[str, Any]:
    listed = [{"id": p.id, "title": p.title, "sentence": first_sentence(p.text)} for p in passages]
    return {
        "kind": "answer",
        "grounded": False,
        "text": text,
        "citations": [],
        "passages": listed,
        "refusal": refusal.value,
        "rejected_citations": [
            {  # the model's words by their length; a reference naming no passage too
                "reference": f"‹{len(citation.reference)} characters›"
                if problem in (CitationProblem.UNKNOWN_REFERENCE, CitationProblem.OTHER_RUN)
                else citation.reference[:SHOWN_EXCERPT],
                "excerpt": f"‹{len(citation.excerpt)} characters›",
                "problem": problem.value,
            }
            for citation, problem in rejected
        ],
    }


# -- strategies --------------------------------------------------------------------------------

words = st.text(max_size=12)
long_words = st.text(max_size=SHOWN_EXCERPT + 20)
citations = st.builds(Citation, words, long_words)
facts = st.builds(Fact, words, st.lists(citations, max_size=3).map(tuple))
zones = st.sampled_from(
    [None, UTC, timezone(timedelta(hours=2)), timezone(-timedelta(hours=5, minutes=30))]
)
times = st.none() | st.datetimes(timezones=zones)
items = st.builds(
    MissingOut,
    kind=st.sampled_from(MissingKind),
    service=st.none() | st.from_regex(SERVICE_PATTERN, fullmatch=True),
    start=times,
    end=times,
)
passages = st.builds(RetrievedPassage, words, words, st.text(max_size=80))
rejected = st.lists(st.tuples(citations, st.sampled_from(CitationProblem)), max_size=3)


@st.composite
def fallbacks(draw: st.DrawFn) -> tuple[FallbackContent, dict[str, Any]]:
    kind = draw(st.sampled_from(FallbackType))
    verified, asked = draw(st.lists(facts, max_size=3)), draw(st.lists(items, max_size=3))
    notes, failed = draw(st.lists(words, max_size=2)), draw(st.lists(words, max_size=2))
    content = FallbackContent(
        kind,
        FALLBACK_MESSAGES[kind],
        tuple(verified),
        tuple(notes),
        tuple(failed),
        tuple(missing_question(m) for m in asked),
        tuple(missing_item(m) for m in asked),
    )
    return content, old_fallback(kind, verified, notes, failed, asked)


@st.composite
def built(draw: st.DrawFn) -> tuple[Published, dict[str, Any]]:
    """Content from today's builders, with what the builders of 6fbc0bc stored for it."""
    match draw(st.sampled_from(["report", "fallback", "chat", "grounded", "ungrounded"])):
        case "report":
            conclusion, others = draw(facts), draw(st.lists(facts, max_size=3))
            return report(conclusion, others), old_report(conclusion, others)
        case "fallback":
            return draw(fallbacks())
        case "chat":
            reply, refusal = (
                draw(st.sampled_from(ChatReply)),
                draw(st.none() | st.sampled_from(AnswerRefusal)),
            )
            chat = reply_content(reply, refusal)
            return chat, old_reply_content(reply, refusal, chat.text)
        case "grounded":
            said, found = draw(st.lists(facts, min_size=1, max_size=3)), draw(st.lists(passages))
            text, cited = answer_text(said), answer_citations(said)
            return grounded_content(said, found), old_grounded_content(text, cited, found)
        case _:
            found, refusal = draw(st.lists(passages)), draw(st.sampled_from(AnswerRefusal))
            failed = draw(rejected)
            answer = ungrounded_content(found, refusal, failed)
            return answer, old_ungrounded_content(found, refusal, failed, answer.text)


# -- what is stored ----------------------------------------------------------------------------


@fuzz_settings(300)
@given(pair=built())
def test_content_is_stored_byte_for_byte_as_before(pair: tuple[Published, dict[str, Any]]) -> None:
    content, before = pair
    assert json.dumps(content.to_json()) == json.dumps(before)


@fuzz_settings(300)
@given(pair=built())
def test_stored_content_reads_back_as_the_same_value(
    pair: tuple[Published, dict[str, Any]],
) -> None:
    content, _ = pair
    stored = json.loads(json.dumps(content.to_json()))
    read = parse_published(stored)
    assert read == content
    assert not isinstance(read, Unreadable) and read.to_json() == stored


def test_the_conclusion_is_a_reports_only() -> None:
    fact = Fact("deploy 42 broke checkout", (Citation("inv-1", "upstream timeout after 30s"),))
    stored = report(fact, []).to_json()
    assert published_conclusion(stored) == fact.statement
    for other in (
        reply_content(ChatReply.GREETING, None),
        ungrounded_content([], AnswerRefusal.NOTHING_RETRIEVED),
        Unreadable("content that is not a JSON object (list)"),
    ):
        assert conclusion_of(other) is None
    assert published_conclusion({**stored, "note": "x"}) is None


# -- what is not -------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)


@st.composite
def edited(draw: st.DrawFn) -> Any:
    """Stored content with one value anywhere in it replaced, one key dropped or one added."""
    data = json.loads(json.dumps(draw(built())[0].to_json()))
    node = data
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return data
        key = draw(st.sampled_from(keys))
        child = node[key]
        if not isinstance(child, dict | list) or not draw(st.booleans()):
            break
        node = child
    match draw(st.sampled_from(["replace", "drop", "add"])):
        case "replace":
            node[key] = draw(json_values)
        case "drop" if isinstance(node, dict):
            del node[key]
        case _ if isinstance(node, dict):
            node[draw(st.text(max_size=6))] = draw(json_values)
    return data


@fuzz_settings(400)
@given(data=json_values | edited())
def test_anything_else_is_unreadable_never_an_exception(data: Any) -> None:
    read = parse_published(data)
    assert isinstance(read, Unreadable) or read.to_json() == data, read
    if isinstance(read, Unreadable):
        assert read.reason and read.kind is None


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ({"reply": "DIAGNOSIS"}, "a system-chat reply that does not exist: 'DIAGNOSIS'"),
        ({"refused": True}, "a system-chat answer whose 'refused' contradicts its refusal"),
        ({"note": 1}, "a system-chat answer of a shape the release never writes (with unknown"),
    ],
)
def test_a_chat_answer_edited_says_what_is_wrong(edit: dict[str, Any], reason: str) -> None:
    stored = reply_content(ChatReply.GREETING, None).to_json()
    read = parse_published(stored | edit)
    assert isinstance(read, Unreadable) and read.reason.startswith(reason), read


@pytest.mark.parametrize(
    "missing",
    [
        [{"kind": "SERVICE", "service": None}],
        [{"kind": "WHO"}],
        [{"kind": "SERVICE", "start": 5}],
        ["SERVICE"],
        {"kind": "SERVICE"},
    ],
)
def test_malformed_missing_items_are_named_as_the_audit_named_them(missing: Any) -> None:
    kind = FallbackType.MISSING_REQUIRED_CONTEXT
    content = FallbackContent(kind, FALLBACK_MESSAGES[kind], (), (), (), (), ())
    read = parse_published(content.to_json() | {"missing": missing})
    assert read == Unreadable("missing information whose structured items are malformed")
