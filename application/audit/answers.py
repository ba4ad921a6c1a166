"""Design §10.1 on the answer routes, from the log alone.

What a SYSTEM_CHAT or KNOWLEDGE_QUERY run published is the harness's own text, or an answer
whose every citation is proven.

A system-chat answer publishes exactly the harness's text for the reply it records. A grounded
knowledge answer cites only passages it records, each excerpt occurring in that passage's
recorded text; an ungrounded one publishes exactly the harness's list of the passages it
records, and no citation. Content recorded before these rules (no ``reply`` or ``grounded``
key) is not held to them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from application.audit.integrity import Violation
from application.replies import reply_text, ungrounded_text
from domain.answers import ChatReply
from domain.grounding import occurs
from domain.run import Run
from domain.states import Intent

if TYPE_CHECKING:
    from application.audit.replay import RunLog

RULE = "design §10.1"


def is_answer_run(log: RunLog) -> bool:
    """Whether the run was routed to SYSTEM_CHAT or KNOWLEDGE_QUERY (it cites no invocation)."""
    intent = getattr(log.run and log.run.aggregate, "intent", None)
    return intent in (Intent.SYSTEM_CHAT, Intent.KNOWLEDGE_QUERY)


def check_answers(log: RunLog) -> list[Violation]:
    """What a SYSTEM_CHAT or KNOWLEDGE_QUERY run published breaks of its route's rules."""
    intent = getattr(log.run and log.run.aggregate, "intent", None)
    found: list[Violation] = []
    for entry in log.of(Run.ReleaseDecision):
        content = entry.event.content
        content = content if isinstance(content, dict) else {}
        if intent is Intent.SYSTEM_CHAT:
            why = _chat_problem(content)
        elif intent is Intent.KNOWLEDGE_QUERY:
            why = _knowledge_problem(content)
        else:
            why = None
        if why:
            found.append(Violation(RULE, why, entry.record))
    return found


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
        if citations or content.get("text") != ungrounded_text(passages):
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
