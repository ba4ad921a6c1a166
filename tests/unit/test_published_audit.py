"""The audit reads typed content to the same findings it read from dicts (design §10.1).

The readers below are those of ``application/audit/rules.py`` and
``application/audit/answer_checks.py`` and of ``Run.previous_turn`` as of 6fbc0bc, verbatim but for
taking the content alone. On every shape a log may hold — today's and the older ones, built as the
builders of their time built them — the typed readers find what these found.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from application.audit.answer_checks import _problem
from application.audit.rules import cited, no_evidence_notes
from application.replies import EXAMPLE_HOW_TO, reply_text, ungrounded_content
from domain.answer_rules import AnswerRefusal, ChatReply
from domain.grounding import occurs
from domain.published_reader import parse_published, published_conclusion
from domain.recorded import LegacyAnswer, LegacyFallback, LegacyReport
from domain.release_states import FallbackType
from domain.states import Intent
from tests._fuzz import fuzz_settings
from tests.unit.test_published import built, words

# -- the readers as of 6fbc0bc -----------------------------------------------------------------


def old_cited(content: Any) -> list[tuple[list[tuple[Any, str | None]], str | None]]:
    if not isinstance(content, dict):
        return []
    found: list[tuple[list[tuple[Any, str | None]], str | None]] = []
    if "citations" in content:
        found.append((_pairs(content["citations"]), None))
    elif "references" in content:
        found.append(([(r, None) for r in _items(content["references"])], None))
    for key in ("facts", "verified_facts"):
        for fact in _items(content.get(key)):
            fact = fact if isinstance(fact, dict) else {}
            if "citations" in fact:
                found.append((_pairs(fact["citations"]), None))
                continue
            excerpt = fact.get("excerpt")
            legacy = excerpt if isinstance(excerpt, str) else ""
            found.append(([(r, None) for r in _items(fact.get("references"))], legacy))
    return found


def _pairs(citations: Any) -> list[tuple[Any, str | None]]:
    pairs: list[tuple[Any, str | None]] = []
    for citation in _items(citations):
        citation = citation if isinstance(citation, dict) else {}
        excerpt = citation.get("excerpt")
        pairs.append((citation.get("reference"), excerpt if isinstance(excerpt, str) else ""))
    return pairs


def old_no_evidence_notes(content: Any) -> list[str]:
    if not isinstance(content, dict):
        return []
    return [str(note) for note in _items(content.get("no_evidence"))]


def _items(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def old_answer_problem(intent: Intent, content: dict[str, Any]) -> str | None:
    if intent is Intent.SYSTEM_CHAT:
        return _chat_problem(content)
    return _knowledge_problem(content)


def _chat_problem(content: dict[str, Any]) -> str | None:
    if "reply" not in content:
        return None
    try:
        reply = ChatReply(content["reply"])
    except ValueError:
        return f"publishes a system-chat reply that does not exist: {content['reply']!r:.80}"
    if content.get("text") != reply_text(reply):
        return f"publishes a system-chat answer that is not the harness's text for {reply.value}"
    return None


def _knowledge_problem(content: dict[str, Any]) -> str | None:
    if "grounded" not in content:
        return None
    passages = [p for p in _list(content.get("passages")) if isinstance(p, dict)]
    citations = _list(content.get("citations"))
    if content["grounded"] is not True:
        text = old_ungrounded_text(passages, content.get("refusal"))
        if citations or content.get("text") != text:
            return "publishes an ungrounded knowledge answer that is not the harness's list"
        return None
    if not citations:
        return "publishes a knowledge answer that cites nothing"
    texts = {p.get("id"): p.get("text") for p in passages}
    for citation in citations:
        citation = citation if isinstance(citation, dict) else {}
        reference, excerpt = citation.get("reference"), citation.get("excerpt")
        source = texts.get(reference)
        if not isinstance(source, str) or not isinstance(excerpt, str):
            return f"publishes a knowledge answer citing {str(reference)!r:.80}, no passage of it"
        if not occurs(excerpt, source):
            return f"publishes a citation of passage {reference!r:.80} whose excerpt is not in it"
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


NEW_REFUSALS = {
    "LIVE_STATE": " It spoke of the systems as they are or were, which a runbook cannot tell;"
    " ask that as a diagnostic question, e.g. 'Why was checkout slow on 2026-11-29?'.",
    "JUDGE_UNSUPPORTED": " The judge did not find every statement supported by the passages it"
    " cites.",
    "JUDGE_UNAVAILABLE": " No judge could check its statements against the passages.",
    "TOO_LARGE": " It was longer than an answer may be.",
}
"""What the list says besides for the refusals that came with the judge of knowledge answers."""


def old_ungrounded_text(passages: list[dict[str, str]], refusal: Any = None) -> str:
    if not passages:
        return (
            "No runbook passage matched the question, so there is nothing to answer it from."
            f" Try other words, e.g. '{EXAMPLE_HOW_TO}'."
        )
    lines = [
        "The answer could not be grounded in the runbooks, so it is not shown."
        f"{NEW_REFUSALS.get(refusal, '')} These runbook passages matched the question:"
    ]
    lines += [f"- [{p['id']}] {p['title']}: {p['sentence']}" for p in passages]
    return "\n".join(lines)


def old_previous_turn(content: dict[str, Any]) -> str | None:
    return str(content.get("conclusion", "")) or None


# -- what older logs hold, as their builders wrote it ------------------------------------------


@dataclass(frozen=True)
class OldFact:
    """``domain.values.Fact`` before citations (d490c19): references and one excerpt."""

    statement: str
    references: tuple[str, ...]
    excerpt: str | None = None


def old_fact_json(fact: OldFact) -> dict[str, Any]:
    data = asdict(fact)
    data["references"] = list(fact.references)
    return data


old_facts = st.builds(
    OldFact, words, st.lists(words, max_size=3).map(tuple), st.none() | st.text(max_size=30)
)


@st.composite
def legacy(draw: st.DrawFn) -> dict[str, Any]:
    """A release decision's content as the release of 195369b..d490c19 wrote it."""
    facts = [old_fact_json(f) for f in draw(st.lists(old_facts, max_size=3))]
    match draw(st.sampled_from(["report", "fallback", "answer"])):
        case "report":
            conclusion = draw(old_facts)
            return {
                "kind": "diagnosis",
                "conclusion": conclusion.statement,
                "references": list(conclusion.references),
                "facts": facts,
            }
        case "fallback":
            return {
                "kind": "fallback",
                "fallback_type": draw(st.sampled_from(FallbackType)).value,
                "message": draw(words),
                "verified_facts": facts,
                "no_evidence": draw(st.lists(words, max_size=2)),
                "missing_info": draw(st.lists(words, max_size=2)),
            }
        case _:
            return {"kind": "answer", "text": draw(words), "citations": draw(st.lists(words))}


@fuzz_settings(200)
@given(content=legacy())
def test_older_logs_read_back_as_their_legacy_shapes(content: dict[str, Any]) -> None:
    read = parse_published(content)
    assert isinstance(read, LegacyReport | LegacyFallback | LegacyAnswer), read
    assert json.dumps(read.to_json()) == json.dumps(content)


@fuzz_settings(300)
@given(content=legacy() | built().map(lambda pair: pair[0].to_json()))
def test_the_audit_reads_what_it_read_from_the_dicts(content: dict[str, Any]) -> None:
    read = parse_published(content)
    assert (published_conclusion(content) or None) == old_previous_turn(content)
    assert list(no_evidence_notes(read)) == old_no_evidence_notes(content)
    if content["kind"] != "answer":  # an answer cites passages: never read for invocations
        assert cited(read) == old_cited(content)


@st.composite
def answers(draw: st.DrawFn) -> dict[str, Any]:
    """An answer as stored, maybe with its text or a citation's excerpt or passage edited."""
    content = draw(built().filter(lambda pair: pair[0].kind == "answer"))[0].to_json()
    if draw(st.booleans()):
        content["text"] = draw(words)
    if content.get("citations") and draw(st.booleans()):
        citation = draw(st.sampled_from(content["citations"]))
        citation[draw(st.sampled_from(["reference", "excerpt"]))] = draw(words)
    if content.get("passages") and draw(st.booleans()):
        del content["passages"][0]
    return content


@fuzz_settings(300)
@given(content=answers() | legacy().filter(lambda c: c["kind"] == "answer"))
def test_an_answer_is_held_to_its_route_as_before(content: dict[str, Any]) -> None:
    read = parse_published(content)
    reply = "reply" in content
    for intent in (Intent.SYSTEM_CHAT, Intent.KNOWLEDGE_QUERY):
        on_its_route = reply is (intent is Intent.SYSTEM_CHAT) or isinstance(read, LegacyAnswer)
        if on_its_route:
            assert _problem(intent, read) == old_answer_problem(intent, content)
        else:  # no route publishes another's answers: a finding now, none before
            assert _problem(intent, read) == (
                f"publishes answer content, which a {intent.value} run never publishes"
            )


def test_a_listed_passage_without_an_id_is_a_finding_not_a_crash() -> None:
    """The dict reader indexed ``p['id']`` of whatever the log held and raised KeyError."""
    stored = ungrounded_content([], AnswerRefusal.NOTHING_RETRIEVED).to_json()
    edited = stored | {"passages": [{"title": "Renew a certificate", "sentence": "Renew it."}]}
    assert _problem(Intent.KNOWLEDGE_QUERY, parse_published(edited)) == (
        "publishes a listed passage of a shape the release never writes (without id)"
    )
