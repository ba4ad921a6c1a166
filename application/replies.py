"""What the harness itself writes for the answer routes (design §10.1).

The system-chat replies' fixed texts, and the knowledge fallback that lists the retrieved
passages.

No text here comes from the model: a system-chat answer only picks a :class:`ChatReply`, and an
ungrounded knowledge answer is replaced by passages' ids, titles and first sentences as stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from domain.answer_rules import (
    AnswerRefusal,
    ChatReply,
    answer_citations,
    answer_text,
    first_sentence,
)
from domain.grounding import SHOWN_EXCERPT
from domain.published import (
    ChatAnswer,
    CitedPassage,
    GroundedAnswer,
    ListedPassage,
    RefusedCitation,
    UngroundedAnswer,
)
from domain.release_states import CitationProblem
from domain.scopes import measured

if TYPE_CHECKING:
    from collections.abc import Sequence

    from domain.answer_rules import RetrievedPassage
    from domain.grounding import Citation
    from domain.values import Fact

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
    statements: Sequence[Fact], passages: Sequence[RetrievedPassage]
) -> GroundedAnswer:
    """A knowledge answer the judge supported: its statements' text and citations.

    The cited passages are recorded as retrieved, so an auditor can prove every excerpt from
    the log alone.
    """
    cited = tuple(CitedPassage(p.id, p.title, p.text) for p in passages)
    return GroundedAnswer(answer_text(statements), answer_citations(statements), cited)


def listed_passages(passages: Sequence[RetrievedPassage]) -> tuple[ListedPassage, ...]:
    """The retrieved passages as the harness lists them: id, title, first sentence."""
    return tuple(ListedPassage(p.id, p.title, first_sentence(p.text)) for p in passages)


def ungrounded_content(
    passages: Sequence[RetrievedPassage],
    refusal: AnswerRefusal,
    rejected: Sequence[tuple[Citation, CitationProblem]] = (),
) -> UngroundedAnswer:
    """The harness's answer instead of an ungrounded one: the retrieved passages, as stored."""
    listed = listed_passages(passages)
    shown = tuple(shown_citation(c, problem) for c, problem in rejected)
    return UngroundedAnswer(ungrounded_text(listed, refusal), listed, refusal, shown)


def shown_citation(citation: Citation, problem: CitationProblem) -> RefusedCitation:
    """A rejected citation as the harness shows it: the passage it names, its problem.

    Its excerpt proved nothing, so it is the model's words: shown by its length alone; so is a
    reference that names no retrieved passage (design §10.1).
    """
    named = problem not in (CitationProblem.UNKNOWN_REFERENCE, CitationProblem.OTHER_RUN)
    reference = citation.reference[:SHOWN_EXCERPT] if named else measured(citation.reference)
    return RefusedCitation(reference, measured(citation.excerpt), problem)


_WHY: dict[AnswerRefusal, str] = {
    AnswerRefusal.LIVE_STATE: (
        " It spoke of the systems as they are or were, which a runbook cannot tell; ask that as"
        f" a diagnostic question, e.g. '{EXAMPLE_DIAGNOSIS}'."
    ),
    AnswerRefusal.JUDGE_UNSUPPORTED: (
        " The judge did not find every statement supported by the passages it cites."
    ),
    AnswerRefusal.JUDGE_UNAVAILABLE: " No judge could check its statements against the passages.",
    AnswerRefusal.TOO_LARGE: " It was longer than an answer may be.",
}
"""What the harness adds for the refusals that came after the first ones (older logs hold the
first sentence alone for the others)."""


def ungrounded_text(passages: Sequence[ListedPassage], refusal: AnswerRefusal | None = None) -> str:
    """The passages' ids, titles and first sentences, under a line saying what happened."""
    if not passages:
        return (
            "No runbook passage matched the question, so there is nothing to answer it from."
            f" Try other words, e.g. '{EXAMPLE_HOW_TO}'."
        )
    why = _WHY.get(refusal, "") if refusal else ""
    lines = [
        f"The answer could not be grounded in the runbooks, so it is not shown.{why}"
        " These runbook passages matched the question:"
    ]
    lines += [f"- [{p.id}] {p.title}: {p.sentence}" for p in passages]
    return "\n".join(lines)
