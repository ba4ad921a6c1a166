"""A knowledge answer's statements: parsed from the model's text, checked, judged, published.

The runtime (:mod:`application.answer_routes`) and the audit verifier
(:mod:`application.audit.answer_checks`) use the same functions on the same inputs, the passages
retrieved and the answer proposed as the log records them, so the verifier derives again exactly
what a run published (design §10.1).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, assert_never

from application.drafts import loads_json
from application.judge import ask_for_verdicts, numbered
from application.prompts import KNOWLEDGE_JUDGE_PROMPT
from application.replies import grounded_content, ungrounded_content
from domain.answer_rules import (
    AnswerRefusal,
    answer_verdict,
    knowledge_answer,
    live_reference,
    rejected_statement_citations,
)
from domain.grounding import JudgedStatement
from domain.release_states import SemanticVerdict

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.run_context import RunContext
    from domain.answer_rules import RetrievedPassage
    from domain.grounding import GroundingRules
    from domain.published import GroundedAnswer, UngroundedAnswer
    from domain.values import Fact


def parse_answer(text: str) -> tuple[Fact, ...] | AnswerRefusal:
    """The statements of the model's answer, or why its text is no answer (design §10.1).

    An answer over the size limit never gets here: its model step refused it whole (TOO_LARGE),
    so the recorded proposal always holds the whole answer.
    """
    try:
        data = loads_json(text)
    except json.JSONDecodeError:
        return AnswerRefusal.NOT_JSON
    return knowledge_answer(data)


def refused_before_judging(
    statements: Sequence[Fact], passages: Sequence[RetrievedPassage], rules: GroundingRules
) -> UngroundedAnswer | None:
    """The harness's list instead of an answer that may not reach the judge, or None.

    Such an answer has a citation that fails, or speaks of the live systems
    (:func:`~domain.answer_rules.live_reference`).
    """
    texts = {p.id: p.text for p in passages}
    rejected = rejected_statement_citations(statements, texts, rules)
    if rejected:
        return ungrounded_content(passages, AnswerRefusal.CITATION_REJECTED, rejected)
    if any(live_reference(s) for s in statements):
        return ungrounded_content(passages, AnswerRefusal.LIVE_STATE)
    return None


def judge_answer(
    ctx: RunContext, statements: Sequence[Fact], passages: Sequence[RetrievedPassage]
) -> tuple[JudgedStatement, ...]:
    """Ask the judge about every statement against the passages it cites, and record it.

    ``SEMANTIC_GUARD_ATTEMPT`` before the call, ``SEMANTIC_GUARD_DECISION`` with every
    statement as judged after it; the verdicts are None when the judge was unavailable.
    """
    ctx.check_active()
    ctx.run.attempt_semantic_guard()
    ctx.journal.record()
    payload = judge_payload(statements, passages)
    verdicts, unavailable = ask_for_verdicts(ctx, KNOWLEDGE_JUDGE_PROMPT, payload, len(statements))
    judged = tuple(
        JudgedStatement(s.statement, s.citations, verdicts[i] if verdicts else None)
        for i, s in enumerate(statements)
    )
    ctx.run.decide_semantic_guard(answer_verdict(judged), unavailable, judged)
    ctx.journal.record()
    return judged


def judge_payload(statements: Sequence[Fact], passages: Sequence[RetrievedPassage]) -> str:
    """What the judge reads: the numbered statements and each passage they cite, by id."""
    cited = {c.reference for s in statements for c in s.citations}
    return json.dumps(
        {
            "statements": numbered(statements),
            "passages": {
                p.id: {"title": p.title, "text": p.text} for p in passages if p.id in cited
            },
        },
        ensure_ascii=False,
    )


def judged_content(
    statements: Sequence[Fact],
    judged: Sequence[JudgedStatement],
    passages: Sequence[RetrievedPassage],
) -> GroundedAnswer | UngroundedAnswer:
    """The model's answer when the judge supported every statement; else the harness's list."""
    verdict = answer_verdict(judged)
    match verdict:
        case SemanticVerdict.SUPPORTED:
            cited = {c.reference for s in statements for c in s.citations}
            return grounded_content(statements, [p for p in passages if p.id in cited])
        case SemanticVerdict.UNSUPPORTED:
            return ungrounded_content(passages, AnswerRefusal.JUDGE_UNSUPPORTED)
        case None:
            return ungrounded_content(passages, AnswerRefusal.JUDGE_UNAVAILABLE)
        case _ as unreachable:
            assert_never(unreachable)
