"""What the harness itself writes for the answer routes (design §10.1).

The system-chat replies' fixed texts, and the knowledge fallback that lists the retrieved
passages.

No text here comes from the model: a system-chat answer only picks a :class:`ChatReply`, and an
ungrounded knowledge answer is replaced by passages' ids, titles and first sentences as stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from domain.answers import AnswerRefusal, ChatReply, first_sentence
from domain.grounding import SHOWN_EXCERPT
from domain.published import (
    ChatAnswer,
    CitedPassage,
    GroundedAnswer,
    ListedPassage,
    RefusedCitation,
    UngroundedAnswer,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.ports import Passage
    from domain.grounding import Citation
    from domain.release_states import CitationProblem

EXAMPLE_DIAGNOSIS = "Why was checkout slow on 2026-11-29?"
EXAMPLE_HOW_TO = "How do I restart the checkout service?"
_ASK = (
    f"I answer diagnostic questions when asked as one, naming the service and the time, e.g."
    f" '{EXAMPLE_DIAGNOSIS}', and how-to questions from the runbooks, e.g. '{EXAMPLE_HOW_TO}'."
)


def reply_text(reply: ChatReply) -> str:
    """The harness's fixed text for a system-chat reply."""
    match reply:
        case ChatReply.GREETING:
            return f"Hello, I am the Diagnosis Harness. {_ASK}"
        case ChatReply.CAPABILITIES:
            return (
                "I investigate incidents with read-only tools (alerts, logs, deployments,"
                " metrics) and publish only what the evidence proves; I also answer how-to"
                f" questions from the runbooks, citing the passages. {_ASK}"
            )
        case ChatReply.HOW_TO_ASK:
            return f"I did not answer that as a chat message. {_ASK}"
        case ChatReply.THANKS:
            return f"You are welcome. {_ASK}"
        case ChatReply.OUT_OF_SCOPE:
            return f"That is outside what I answer. {_ASK}"
        case _ as unreachable:
            assert_never(unreachable)


def reply_content(reply: ChatReply, refusal: AnswerRefusal | None) -> ChatAnswer:
    """A system-chat answer's published content: the reply, its fixed text, and any refusal."""
    return ChatAnswer(reply, reply_text(reply), refusal)


def grounded_content(
    text: str, citations: Sequence[Citation], passages: Sequence[Passage]
) -> GroundedAnswer:
    """A knowledge answer every citation of which proved: the model's text and its citations.

    The cited passages are recorded as retrieved, so an auditor can prove every excerpt from
    the log alone.
    """
    cited = tuple(CitedPassage(p.id, p.title, p.text) for p in passages)
    return GroundedAnswer(text, tuple(citations), cited)


def ungrounded_content(
    passages: Sequence[Passage],
    refusal: AnswerRefusal,
    rejected: Sequence[tuple[Citation, CitationProblem]] = (),
) -> UngroundedAnswer:
    """The harness's answer instead of an ungrounded one: the retrieved passages, as stored."""
    listed = tuple(ListedPassage(p.id, p.title, first_sentence(p.text)) for p in passages)
    shown = tuple(
        RefusedCitation(c.reference[:SHOWN_EXCERPT], c.excerpt[:SHOWN_EXCERPT], problem)
        for c, problem in rejected
    )
    return UngroundedAnswer(ungrounded_text(listed), listed, refusal, shown)


def ungrounded_text(passages: Sequence[ListedPassage]) -> str:
    """The passages' ids, titles and first sentences, under a line saying what happened."""
    if not passages:
        return (
            "No runbook passage matched the question, so there is nothing to answer it from."
            f" Try other words, e.g. '{EXAMPLE_HOW_TO}'."
        )
    lines = [
        "The answer could not be grounded in the runbooks, so it is not shown."
        " These runbook passages matched the question:"
    ]
    lines += [f"- [{p.id}] {p.title}: {p.sentence}" for p in passages]
    return "\n".join(lines)
