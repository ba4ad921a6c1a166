"""The SYSTEM_CHAT and KNOWLEDGE_QUERY routes: one model answer each, checked before publishing.

System chat: the model picks one :class:`ChatReply` and the harness publishes that reply's fixed
text; any other answer is refused and publishes how to ask. Knowledge: the model answers with
citations of the retrieved passages; the answer is published only when every citation proves
(design §10.1), otherwise the harness lists the passages. Both are released SUCCESS: a refused
answer is a safe answer, and the refusal is recorded in the published content.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from application.drafts import loads_json
from application.guards import Publication, publish
from application.ports import Message, ModelOutputTooLarge, ModelRequest
from application.prompts import CHAT_PROMPT, CHAT_SCHEMA, KNOWLEDGE_PROMPT, KNOWLEDGE_SCHEMA
from application.replies import grounded_content, reply_content, ungrounded_content
from domain.answers import (
    AnswerRefusal,
    knowledge_answer,
    pick_reply,
    rejected_citations,
)
from domain.release_states import ReleaseOutcome
from domain.states import ChatApplicationStatus, ModelStepPurpose

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.harness import RunContext
    from application.ports import KnowledgeRetriever, Passage
    from domain.grounding import GroundingRules
    from domain.published import GroundedAnswer, Published, UngroundedAnswer


def answer_chat(ctx: RunContext) -> Publication:
    """SYSTEM_CHAT: publish the fixed text of the reply the model picked, or how to ask."""
    _enter(ctx, ChatApplicationStatus.SYSTEM_RESPONDING)
    text = _ask(ctx, CHAT_PROMPT, ctx.run.query, CHAT_SCHEMA)
    if text is None:
        return _publish(ctx, reply_content(pick_reply(None)[0], AnswerRefusal.TOO_LARGE))
    try:
        reply, refusal = pick_reply(loads_json(text))
    except ValueError:
        reply, refusal = pick_reply(None)[0], AnswerRefusal.NOT_JSON
    return _publish(ctx, reply_content(reply, refusal))


def answer_knowledge(
    ctx: RunContext,
    retriever: KnowledgeRetriever | None,
    rules: GroundingRules,
) -> Publication:
    """KNOWLEDGE_QUERY: one retrieval, one answer, published only when its citations prove."""
    _enter(ctx, ChatApplicationStatus.KNOWLEDGE_SEARCHING)
    passages = list(retriever.search(ctx.run.query)) if retriever else []
    if not passages:  # nothing to ground an answer in: no model call
        return _publish(ctx, ungrounded_content([], AnswerRefusal.NOTHING_RETRIEVED))
    _enter(ctx, ChatApplicationStatus.KNOWLEDGE_ANSWERING)
    prompt = json.dumps(
        {
            "question": ctx.run.query,
            "passages": [{"id": p.id, "title": p.title, "text": p.text} for p in passages],
        },
        ensure_ascii=False,
    )
    text = _ask(ctx, KNOWLEDGE_PROMPT, prompt, KNOWLEDGE_SCHEMA)
    if text is None:
        return _publish(ctx, ungrounded_content(passages, AnswerRefusal.TOO_LARGE))
    return _publish(ctx, _checked(text, passages, rules))


def _checked(
    text: str, passages: Sequence[Passage], rules: GroundingRules
) -> GroundedAnswer | UngroundedAnswer:
    """The grounded answer's content, or the harness's passages with why it was refused."""
    try:
        parsed = knowledge_answer(loads_json(text))
    except ValueError:
        parsed = AnswerRefusal.NOT_JSON
    if isinstance(parsed, AnswerRefusal):
        return ungrounded_content(passages, parsed)
    answer, citations = parsed
    rejected = rejected_citations(citations, {p.id: p.text for p in passages}, rules)
    if rejected:
        return ungrounded_content(passages, AnswerRefusal.CITATION_REJECTED, rejected)
    cited = [p for p in passages if any(c.reference == p.id for c in citations)]
    return grounded_content(answer, citations, cited)


def _enter(ctx: RunContext, status: ChatApplicationStatus) -> None:
    ctx.check_active()
    ctx.run.change_status(status)
    ctx.save()


def _ask(ctx: RunContext, system: str, user: str, schema: dict[str, Any]) -> str | None:
    """One ANSWER call, bounded by the model timeout and the deadline; None: refused TOO_LARGE."""
    request = ModelRequest(
        ModelStepPurpose.ANSWER,
        (Message("system", system), Message("user", user)),
        json_schema=schema,
    )
    try:
        return ctx.call_model(request).text
    except ModelOutputTooLarge:  # recorded TOO_LARGE by the model step; nothing reads it
        return None


def _publish(ctx: RunContext, content: Published) -> Publication:
    return publish(ctx, ReleaseOutcome.SUCCESS, None, content)
