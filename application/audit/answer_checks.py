"""Design §10.1 on the answer routes, from the log alone.

What a SYSTEM_CHAT or KNOWLEDGE_QUERY run published is the harness's own text, or an answer
whose every citation is proven.

A system-chat answer publishes exactly the harness's text for the reply it records. A grounded
knowledge answer cites only passages it records, each excerpt occurring in that passage's
recorded text; an ungrounded one publishes exactly the harness's list of the passages it
records, and no citation. An answer recorded before these rules (``LegacyAnswer``) is not held
to them; content of another route, or of no shape the release writes, is a finding.

A knowledge run that records its passages (``PASSAGES_RETRIEVED``) is held to more: what it
published is derived again from the log (:mod:`application.audit.knowledge`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from application.audit.integrity import Violation
from application.audit.knowledge import rederived_answer
from application.replies import reply_text, ungrounded_text
from domain.grounding import occurs
from domain.published import (
    ChatAnswer,
    DiagnosisReport,
    FallbackContent,
    GroundedAnswer,
    UngroundedAnswer,
)
from domain.published_reader import parse_published
from domain.recorded import LegacyAnswer, LegacyFallback, LegacyReport, Unreadable
from domain.run import Run
from domain.states import Intent

if TYPE_CHECKING:
    from application.audit.replay import RunLog
    from domain.recorded import Recorded

RULE = "design §10.1"


def is_answer_run(log: RunLog) -> bool:
    """Whether the run was routed to SYSTEM_CHAT or KNOWLEDGE_QUERY (it cites no invocation)."""
    intent = getattr(log.run and log.run.aggregate, "intent", None)
    return intent in (Intent.SYSTEM_CHAT, Intent.KNOWLEDGE_QUERY)


def check_answers(log: RunLog) -> list[Violation]:
    """What a SYSTEM_CHAT or KNOWLEDGE_QUERY run published breaks of its route's rules."""
    intent = getattr(log.run and log.run.aggregate, "intent", None)
    if intent not in (Intent.SYSTEM_CHAT, Intent.KNOWLEDGE_QUERY):
        return []
    found: list[Violation] = []
    for entry in log.of(Run.ReleaseDecision):
        content = parse_published(entry.event.content)
        why = _problem(intent, content)
        if why is None and intent is Intent.KNOWLEDGE_QUERY:
            why = rederived_answer(log, entry, content)
        if why:
            found.append(Violation(RULE, why, entry.record))
    return found


def _problem(intent: Intent, content: Recorded) -> str | None:
    """What one answer breaks of the rules of the route it was published on, or None."""
    chat = intent is Intent.SYSTEM_CHAT
    match content:
        case ChatAnswer() if chat:
            return _chat_problem(content)
        case GroundedAnswer() if not chat:
            return _grounded_problem(content)
        case UngroundedAnswer() if not chat:
            return _ungrounded_problem(content)
        case LegacyAnswer():
            return None  # recorded before the answer routes were guarded
        case Unreadable(reason=reason):
            return f"publishes {reason}"
        case (
            ChatAnswer()
            | GroundedAnswer()
            | UngroundedAnswer()
            | DiagnosisReport()
            | FallbackContent()
            | LegacyReport()
            | LegacyFallback()
        ):
            return f"publishes {content.kind} content, which a {intent.value} run never publishes"
        case _ as unreachable:
            assert_never(unreachable)


def _chat_problem(content: ChatAnswer) -> str | None:
    if content.text != reply_text(content.reply):
        return (
            "publishes a system-chat answer that is not the harness's text for"
            f" {content.reply.value}"
        )
    return None


def _ungrounded_problem(content: UngroundedAnswer) -> str | None:
    if content.text != ungrounded_text(content.passages, content.refusal):
        return "publishes an ungrounded knowledge answer that is not the harness's list"
    return None


def _grounded_problem(content: GroundedAnswer) -> str | None:
    if not content.citations:
        return "publishes a knowledge answer that cites nothing"
    texts = {p.id: p.text for p in content.passages}
    for citation in content.citations:
        reference, source = citation.reference, texts.get(citation.reference)
        if source is None:
            return f"publishes a knowledge answer citing {reference!r:.80}, no passage of it"
        if not occurs(citation.excerpt, source):
            return f"publishes a citation of passage {reference!r:.80} whose excerpt is not in it"
    return None
