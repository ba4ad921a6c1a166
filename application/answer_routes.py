"""The SYSTEM_CHAT and KNOWLEDGE_QUERY routes: one model answer each, checked before publishing.

System chat: the model picks one :class:`ChatReply` and the harness publishes that reply's fixed
text; any other answer is refused and publishes how to ask. Knowledge: the passages retrieved are
recorded (``PASSAGES_RETRIEVED``), the model answers with statements citing them, and its answer
is recorded as proposed (``ANSWER_PROPOSED``); it is published only when every citation proves,
no statement names a moment of the live systems, and the judge supports every statement against
the passages it cites (design §10.1); otherwise the harness lists the passages. Both are
released SUCCESS: a refused answer is a safe answer, and the refusal is recorded in the
published content.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from application.drafts import loads_json
from application.guards import Publication, publish
from application.knowledge_answers import (
    judge_answer,
    judged_content,
    parse_answer,
    refused_before_judging,
)
from application.ports import Message, ModelOutputTooLarge, ModelRequest
from application.prompts import CHAT_PROMPT, CHAT_SCHEMA, KNOWLEDGE_PROMPT, KNOWLEDGE_SCHEMA
from application.replies import reply_content, ungrounded_content
from domain.answer_rules import AnswerRefusal, RetrievedPassage, pick_reply
from domain.release_states import ReleaseOutcome
from domain.states import ChatApplicationStatus, ModelStepPurpose

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.ports import KnowledgeRetriever
    from application.run_context import RunContext
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
    """KNOWLEDGE_QUERY: one retrieval, one answer, published only when proven and judged."""
    _enter(ctx, ChatApplicationStatus.KNOWLEDGE_SEARCHING)
    found = retriever.search(ctx.run.query) if retriever else ()
    passages = tuple(RetrievedPassage(p.id, p.title, p.text) for p in found)
    ctx.run.retrieve_passages(passages)
    ctx.journal.record()
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
    return _publish(ctx, _checked(ctx, text, passages, rules))


def _checked(
    ctx: RunContext, text: str, passages: Sequence[RetrievedPassage], rules: GroundingRules
) -> GroundedAnswer | UngroundedAnswer:
    """The judged answer's content, or the harness's passages with why it was refused."""
    parsed = parse_answer(text)
    refusal = parsed if isinstance(parsed, AnswerRefusal) else None
    ctx.run.propose_answer(text, refusal)
    ctx.journal.record()
    if isinstance(parsed, AnswerRefusal):
        return ungrounded_content(passages, parsed)
    refused = refused_before_judging(parsed, passages, rules)
    if refused is not None:
        return refused
    return judged_content(parsed, judge_answer(ctx, parsed, passages), passages)


def _enter(ctx: RunContext, status: ChatApplicationStatus) -> None:
    ctx.check_active()
    ctx.run.change_status(status)
    ctx.journal.record()


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
